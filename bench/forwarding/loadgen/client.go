package main

// Client mode: N connections, each sending CreateTopics v7 (validate_only, a unique topic name) one at
// a time for a warm-up and then a measured duration; optionally wrapped in an Envelope, as a broker
// (or the proxy) sends it to the controller.

import (
	"bufio"
	"fmt"
	"net"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

const (
	createTopicsVersion = 7
	createTopicsTimeout = 30000
	ioTimeout           = 60 * time.Second
)

type clientOptions struct {
	target      string
	connections int
	duration    time.Duration
	warmup      time.Duration
	user        string
	password    string
	envelope    bool
	principal   string
	clientHost  net.IP
	topicPrefix string
}

// connResult is one connection's measured window.
type connResult struct {
	latencies []time.Duration
	errors    map[string]int
	failure   string
}

type clientReport struct {
	Mode        string         `json:"mode"`
	Target      string         `json:"target"`
	Connections int            `json:"connections"`
	Envelope    bool           `json:"envelope"`
	Principal   string         `json:"principal,omitempty"`
	DurationS   float64        `json:"duration_s"`
	WarmupS     float64        `json:"warmup_s"`
	Requests    int            `json:"requests"`
	Errors      map[string]int `json:"errors"`
	Failures    []string       `json:"connection_failures"`
	RPS         float64        `json:"rps"`
	LatencyUs   latencySummary `json:"latency_us"`
	GoMaxProcs  int            `json:"gomaxprocs"`
}

type latencySummary struct {
	P50  float64 `json:"p50"`
	P99  float64 `json:"p99"`
	Max  float64 `json:"max"`
	Mean float64 `json:"mean"`
}

func runClient(opts clientOptions) clientReport {
	started := time.Now()
	measureFrom := started.Add(opts.warmup)
	measureUntil := measureFrom.Add(opts.duration)
	results := make([]connResult, opts.connections)
	var wg sync.WaitGroup
	for i := range opts.connections {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			results[i] = runConnection(opts, i, measureFrom, measureUntil)
		}(i)
	}
	wg.Wait()

	report := clientReport{
		Mode: "client", Target: opts.target, Connections: opts.connections, Envelope: opts.envelope,
		DurationS: opts.duration.Seconds(), WarmupS: opts.warmup.Seconds(), Errors: map[string]int{}, Failures: []string{},
	}
	if opts.envelope {
		report.Principal = opts.principal
	}
	var all []time.Duration
	for _, r := range results {
		all = append(all, r.latencies...)
		for code, n := range r.errors {
			report.Errors[code] += n
		}
		if r.failure != "" {
			report.Failures = append(report.Failures, r.failure)
		}
	}
	report.Requests = len(all)
	report.RPS = float64(len(all)) / opts.duration.Seconds()
	report.LatencyUs = summarize(all)
	return report
}

func summarize(all []time.Duration) latencySummary {
	if len(all) == 0 {
		return latencySummary{}
	}
	sort.Slice(all, func(a, b int) bool { return all[a] < all[b] })
	var total time.Duration
	for _, d := range all {
		total += d
	}
	us := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1000 }
	rank := func(q float64) time.Duration {
		i := int(q*float64(len(all))+0.5) - 1
		return all[min(max(i, 0), len(all)-1)]
	}
	return latencySummary{P50: us(rank(0.50)), P99: us(rank(0.99)), Max: us(all[len(all)-1]), Mean: us(total / time.Duration(len(all)))}
}

// principalData is Kafka's DefaultPrincipalData v0 (version, then the flexible struct), as DefaultKafkaPrincipalBuilder writes it.
func principalData(principal string) ([]byte, error) {
	for i := 0; i < len(principal); i++ {
		if principal[i] == ':' {
			data := kmsg.DefaultPrincipalData{Version: 0, Type: principal[:i], Name: principal[i+1:]}
			return data.AppendTo(nil), nil
		}
	}
	return nil, fmt.Errorf("principal %q is not Type:name", principal)
}

func runConnection(opts clientOptions, index int, measureFrom, measureUntil time.Time) connResult {
	result := connResult{errors: map[string]int{}}
	conn, err := net.DialTimeout("tcp", opts.target, ioTimeout)
	if err != nil {
		result.failure = fmt.Sprintf("connection %d: %v", index, err)
		return result
	}
	defer conn.Close()
	reader := bufio.NewReaderSize(conn, 64<<10)
	formatter := kmsg.NewRequestFormatter(kmsg.FormatterClientID("bench-loadgen"))
	var correlationID int32
	call := func(req kmsg.Request, resp kmsg.Response) error {
		correlationID++
		if err := conn.SetDeadline(time.Now().Add(ioTimeout)); err != nil {
			return err
		}
		if _, err := conn.Write(formatter.AppendRequest(nil, req, correlationID)); err != nil {
			return err
		}
		frame, err := readFrame(reader)
		if err != nil {
			return err
		}
		got, err := decodeResponse(frame, resp)
		if err != nil {
			return err
		}
		if got != correlationID {
			return fmt.Errorf("correlation id %d, expected %d", got, correlationID)
		}
		return nil
	}
	if opts.user != "" {
		if err := saslPlain(call, opts.user, opts.password); err != nil {
			result.failure = fmt.Sprintf("connection %d: login: %v", index, err)
			return result
		}
	}
	var principal []byte
	if opts.envelope {
		if principal, err = principalData(opts.principal); err != nil {
			result.failure = err.Error()
			return result
		}
	}
	for seq := 0; ; seq++ {
		began := time.Now()
		if !began.Before(measureUntil) {
			return result
		}
		create := kmsg.NewPtrCreateTopicsRequest()
		create.Version = createTopicsVersion
		create.TimeoutMillis = createTopicsTimeout
		create.ValidateOnly = true
		topic := kmsg.NewCreateTopicsRequestTopic()
		topic.Topic = opts.topicPrefix + "-" + strconv.Itoa(index) + "-" + strconv.Itoa(seq)
		topic.NumPartitions = 1
		topic.ReplicationFactor = 1
		create.Topics = append(create.Topics, topic)
		codes, err := sendCreate(call, formatter, create, opts, principal, &correlationID)
		if err != nil {
			result.failure = fmt.Sprintf("connection %d after %d requests: %v", index, seq, err)
			return result
		}
		finished := time.Now()
		if began.Before(measureFrom) || finished.After(measureUntil) {
			continue
		}
		result.latencies = append(result.latencies, finished.Sub(began))
		for _, code := range codes {
			result.errors[code]++
		}
	}
}

type caller func(kmsg.Request, kmsg.Response) error

func saslPlain(call caller, user, password string) error {
	handshake := kmsg.NewPtrSASLHandshakeRequest()
	handshake.Version = 1
	handshake.Mechanism = "PLAIN"
	handshakeResp := kmsg.NewPtrSASLHandshakeResponse()
	handshakeResp.Version = 1
	if err := call(handshake, handshakeResp); err != nil {
		return err
	}
	if handshakeResp.ErrorCode != 0 {
		return fmt.Errorf("SaslHandshake error %d", handshakeResp.ErrorCode)
	}
	auth := kmsg.NewPtrSASLAuthenticateRequest()
	auth.Version = 2
	auth.SASLAuthBytes = []byte("\x00" + user + "\x00" + password)
	authResp := kmsg.NewPtrSASLAuthenticateResponse()
	authResp.Version = 2
	if err := call(auth, authResp); err != nil {
		return err
	}
	if authResp.ErrorCode != 0 {
		msg := ""
		if authResp.ErrorMessage != nil {
			msg = *authResp.ErrorMessage
		}
		return fmt.Errorf("SaslAuthenticate error %d: %s", authResp.ErrorCode, msg)
	}
	return nil
}

// sendCreate sends one CreateTopics (in an Envelope when asked) and returns the error codes that were not 0.
func sendCreate(call caller, formatter *kmsg.RequestFormatter, create *kmsg.CreateTopicsRequest, opts clientOptions, principal []byte, correlationID *int32) ([]string, error) {
	resp := kmsg.NewPtrCreateTopicsResponse()
	resp.Version = create.Version
	if !opts.envelope {
		if err := call(create, resp); err != nil {
			return nil, err
		}
		return topicErrors(resp), nil
	}
	// The inner request carries the same correlation id as its envelope, as a forwarding broker's does.
	inner := formatter.AppendRequest(nil, create, *correlationID+1)[4:]
	envelope := kmsg.NewPtrEnvelopeRequest()
	envelope.RequestData = inner
	envelope.RequestPrincipal = principal
	envelope.ClientHostAddress = opts.clientHost
	envelopeResp := kmsg.NewPtrEnvelopeResponse()
	if err := call(envelope, envelopeResp); err != nil {
		return nil, err
	}
	if envelopeResp.ErrorCode != 0 {
		return []string{"envelope:" + strconv.Itoa(int(envelopeResp.ErrorCode))}, nil
	}
	if _, err := decodeResponse(envelopeResp.ResponseData, resp); err != nil {
		return nil, fmt.Errorf("embedded response: %w", err)
	}
	return topicErrors(resp), nil
}

func topicErrors(resp *kmsg.CreateTopicsResponse) []string {
	var codes []string
	for _, topic := range resp.Topics {
		if topic.ErrorCode != 0 {
			codes = append(codes, strconv.Itoa(int(topic.ErrorCode)))
		}
	}
	if len(resp.Topics) != 1 {
		codes = append(codes, "topics:"+strconv.Itoa(len(resp.Topics)))
	}
	return codes
}
