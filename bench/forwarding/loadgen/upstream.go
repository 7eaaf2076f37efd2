package main

// Zero-work upstream mode: a TCP server that plays a KRaft controller just enough for the proxy
// (ApiVersions, SASL with any credentials, DescribeCluster naming itself as the active controller)
// and answers every Envelope at once with a valid response to the request inside it.

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// controllerRanges are what a Kafka 4.3.1 controller listener advertises (ApiVersions v3 to the
// CONTROLLER listener of a combined node), as {key, min, max}.
var controllerRanges = [][3]int16{
	{1, 4, 18}, {17, 0, 1}, {18, 0, 4}, {19, 2, 7}, {20, 1, 6}, {29, 1, 3}, {30, 1, 3}, {31, 1, 3}, {32, 1, 4},
	{33, 0, 2}, {36, 0, 2}, {37, 0, 3}, {38, 1, 3}, {39, 1, 2}, {40, 1, 2}, {41, 1, 3}, {43, 0, 2}, {44, 0, 1},
	{45, 0, 1}, {46, 0, 0}, {49, 0, 1}, {50, 0, 0}, {51, 0, 0}, {52, 0, 2}, {53, 0, 1}, {54, 0, 1}, {55, 0, 2},
	{56, 2, 3}, {57, 0, 2}, {58, 0, 0}, {59, 0, 1}, {60, 0, 2}, {62, 0, 4}, {63, 0, 2}, {64, 0, 0}, {67, 0, 0},
	{70, 0, 0}, {73, 0, 0}, {80, 0, 1}, {81, 0, 0}, {82, 0, 0},
}

const (
	keySASLHandshake    int16 = 17
	keyCreateTopics     int16 = 19
	keySASLAuthenticate int16 = 36
	keyEnvelope         int16 = 58
	keyDescribeCluster  int16 = 60
	maxAPIVersions      int16 = 4
)

type upstream struct {
	nodeID    int32
	host      string
	port      int32
	clusterID string
}

func runUpstream(listen string, nodeID int32, clusterID string) error {
	listener, err := net.Listen("tcp", listen)
	if err != nil {
		return err
	}
	addr := listener.Addr().(*net.TCPAddr)
	server := &upstream{nodeID: nodeID, host: addr.IP.String(), port: int32(addr.Port), clusterID: clusterID}
	announce, _ := json.Marshal(map[string]any{"listening": net.JoinHostPort(server.host, strconv.Itoa(addr.Port)), "node_id": nodeID})
	fmt.Fprintln(os.Stdout, string(announce))
	for {
		conn, err := listener.Accept()
		if err != nil {
			return err
		}
		go server.serve(conn)
	}
}

func (s *upstream) serve(conn net.Conn) {
	defer conn.Close()
	reader := bufio.NewReaderSize(conn, 64<<10)
	writer := bufio.NewWriterSize(conn, 64<<10)
	var out []byte
	for {
		frame, err := readFrame(reader)
		if err != nil {
			if err != io.EOF {
				fmt.Fprintf(os.Stderr, "upstream: %s: %v\n", conn.RemoteAddr(), err)
			}
			return
		}
		header, err := parseRequestHeader(frame)
		if err != nil {
			fmt.Fprintf(os.Stderr, "upstream: %s: %v\n", conn.RemoteAddr(), err)
			return
		}
		resp, err := s.answer(header, frame[header.bodyOffset:])
		if err != nil {
			fmt.Fprintf(os.Stderr, "upstream: %s: api %d v%d: %v\n", conn.RemoteAddr(), header.key, header.version, err)
			return
		}
		out = appendFrame(out[:0], header.correlationID, resp)
		if _, err := writer.Write(out); err != nil {
			return
		}
		if reader.Buffered() == 0 {
			if err := writer.Flush(); err != nil {
				return
			}
		}
	}
}

func (s *upstream) answer(header requestHeader, body []byte) (kmsg.Response, error) {
	switch header.key {
	case keyAPIVersions:
		return apiVersions(header.version), nil
	case keySASLHandshake:
		resp := kmsg.NewPtrSASLHandshakeResponse()
		resp.Version = header.version
		resp.SupportedMechanisms = []string{"PLAIN"}
		return resp, nil
	case keySASLAuthenticate:
		resp := kmsg.NewPtrSASLAuthenticateResponse()
		resp.Version = header.version
		resp.SASLAuthBytes = []byte{}
		return resp, nil
	case keyDescribeCluster:
		req := kmsg.NewPtrDescribeClusterRequest()
		req.Version = header.version
		if err := req.ReadFrom(body); err != nil {
			return nil, err
		}
		resp := kmsg.NewPtrDescribeClusterResponse()
		resp.Version = header.version
		resp.EndpointType = req.EndpointType
		resp.ClusterID = s.clusterID
		resp.ControllerID = s.nodeID
		broker := kmsg.NewDescribeClusterResponseBroker()
		broker.NodeID, broker.Host, broker.Port = s.nodeID, s.host, s.port
		resp.Brokers = append(resp.Brokers, broker)
		return resp, nil
	case keyEnvelope:
		return s.envelope(header.version, body)
	case keyCreateTopics:
		return createTopics(header.version, body)
	}
	resp := kmsg.ResponseForKey(header.key)
	if resp == nil {
		return nil, fmt.Errorf("unknown api key")
	}
	resp.SetVersion(header.version)
	return resp, nil
}

// apiVersions answers as Kafka does: a version it does not know gets v0 with UNSUPPORTED_VERSION and the list.
func apiVersions(version int16) kmsg.Response {
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.Version = version
	if version > maxAPIVersions {
		resp.Version = 0
		resp.ErrorCode = errUnsupportedVersion
	}
	for _, r := range controllerRanges {
		key := kmsg.NewApiVersionsResponseApiKey()
		key.ApiKey, key.MinVersion, key.MaxVersion = r[0], r[1], r[2]
		resp.ApiKeys = append(resp.ApiKeys, key)
	}
	return resp
}

// envelope answers the embedded request at once: its response (header with the inner correlation id, then body) goes back inside.
func (s *upstream) envelope(version int16, body []byte) (kmsg.Response, error) {
	req := kmsg.NewPtrEnvelopeRequest()
	req.Version = version
	if err := req.ReadFrom(body); err != nil {
		return nil, err
	}
	inner, err := parseRequestHeader(req.RequestData)
	if err != nil {
		return nil, fmt.Errorf("embedded request: %w", err)
	}
	var embedded kmsg.Response
	if inner.key == keyCreateTopics {
		if embedded, err = createTopics(inner.version, req.RequestData[inner.bodyOffset:]); err != nil {
			return nil, err
		}
	} else if embedded = kmsg.ResponseForKey(inner.key); embedded != nil {
		embedded.SetVersion(inner.version)
	} else {
		return nil, fmt.Errorf("embedded api key %d", inner.key)
	}
	resp := kmsg.NewPtrEnvelopeResponse()
	resp.Version = version
	resp.ResponseData = appendResponse(nil, inner.correlationID, embedded)
	return resp, nil
}

// createTopics answers every topic with success, echoing the requested partitions and replication factor.
func createTopics(version int16, body []byte) (kmsg.Response, error) {
	req := kmsg.NewPtrCreateTopicsRequest()
	req.Version = version
	if err := req.ReadFrom(body); err != nil {
		return nil, err
	}
	resp := kmsg.NewPtrCreateTopicsResponse()
	resp.Version = version
	for _, t := range req.Topics {
		topic := kmsg.NewCreateTopicsResponseTopic()
		topic.Topic = t.Topic
		topic.NumPartitions = t.NumPartitions
		topic.ReplicationFactor = t.ReplicationFactor
		resp.Topics = append(resp.Topics, topic)
	}
	return resp, nil
}
