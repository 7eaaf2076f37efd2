package main

// Kafka framing by hand: a 4-byte size, a request header (v1, or v2 with tagged fields for flexible
// versions), a body encoded by kmsg. Responses carry header v0 (correlation id) or v1 (plus tagged
// fields); ApiVersions answers always use v0, so that any client can read them.

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/twmb/franz-go/pkg/kmsg"
)

const (
	keyAPIVersions        int16 = 18
	maxFrameBytes               = 100 << 20
	errUnsupportedVersion int16 = 35
)

// readFrame reads one size-prefixed frame and returns its payload (without the size).
func readFrame(r *bufio.Reader) ([]byte, error) {
	var size [4]byte
	if _, err := io.ReadFull(r, size[:]); err != nil {
		return nil, err
	}
	n := int32(binary.BigEndian.Uint32(size[:]))
	if n < 0 || n > maxFrameBytes {
		return nil, fmt.Errorf("frame of %d bytes", n)
	}
	frame := make([]byte, n)
	if _, err := io.ReadFull(r, frame); err != nil {
		return nil, err
	}
	return frame, nil
}

// skipTags skips a tagged-field section starting at src[0]; returns the bytes consumed.
func skipTags(src []byte) (int, error) {
	count, n := binary.Uvarint(src)
	if n <= 0 {
		return 0, errors.New("bad tag count")
	}
	at := n
	for i := uint64(0); i < count; i++ {
		_, m := binary.Uvarint(src[at:])
		if m <= 0 {
			return 0, errors.New("bad tag")
		}
		at += m
		size, m := binary.Uvarint(src[at:])
		if m <= 0 || uint64(len(src)-at-m) < size {
			return 0, errors.New("bad tag size")
		}
		at += m + int(size)
	}
	return at, nil
}

// requestHeader is what a server needs of a request header.
type requestHeader struct {
	key, version  int16
	correlationID int32
	bodyOffset    int
}

// parseRequestHeader reads the header of a request payload (no size prefix).
func parseRequestHeader(frame []byte) (requestHeader, error) {
	if len(frame) < 10 {
		return requestHeader{}, errors.New("short request header")
	}
	h := requestHeader{
		key:           int16(binary.BigEndian.Uint16(frame[0:])),
		version:       int16(binary.BigEndian.Uint16(frame[2:])),
		correlationID: int32(binary.BigEndian.Uint32(frame[4:])),
	}
	clientIDLen := int16(binary.BigEndian.Uint16(frame[8:]))
	at := 10
	if clientIDLen > 0 {
		at += int(clientIDLen)
	}
	if at > len(frame) {
		return requestHeader{}, errors.New("client id past the end")
	}
	if req := kmsg.RequestForKey(h.key); req != nil {
		req.SetVersion(h.version)
		if req.IsFlexible() {
			n, err := skipTags(frame[at:])
			if err != nil {
				return requestHeader{}, err
			}
			at += n
		}
	}
	h.bodyOffset = at
	return h, nil
}

// responseHeaderSize is the size of the response header before the body of a kmsg response.
func responseBody(frame []byte, resp kmsg.Response) ([]byte, int32, error) {
	if len(frame) < 4 {
		return nil, 0, errors.New("short response")
	}
	correlationID := int32(binary.BigEndian.Uint32(frame))
	at := 4
	if resp.IsFlexible() && resp.Key() != keyAPIVersions {
		n, err := skipTags(frame[at:])
		if err != nil {
			return nil, 0, err
		}
		at += n
	}
	return frame[at:], correlationID, nil
}

// decodeResponse decodes a response payload (no size prefix) into resp and returns its correlation id.
func decodeResponse(frame []byte, resp kmsg.Response) (int32, error) {
	body, correlationID, err := responseBody(frame, resp)
	if err != nil {
		return 0, err
	}
	return correlationID, resp.ReadFrom(body)
}

// appendResponse appends a response payload (header + body, no size prefix).
func appendResponse(dst []byte, correlationID int32, resp kmsg.Response) []byte {
	dst = binary.BigEndian.AppendUint32(dst, uint32(correlationID))
	if resp.IsFlexible() && resp.Key() != keyAPIVersions {
		dst = append(dst, 0)
	}
	return resp.AppendTo(dst)
}

// appendFrame appends a size-prefixed response frame.
func appendFrame(dst []byte, correlationID int32, resp kmsg.Response) []byte {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	dst = appendResponse(dst, correlationID, resp)
	binary.BigEndian.PutUint32(dst[start:], uint32(len(dst)-start-4))
	return dst
}
