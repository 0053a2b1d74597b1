package callhome

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"
)

// AccessLine is one line of the proxy engine's access log, as the
// control plane writes it: the fields of the VM's contract
// (vmconfig.AccessLine: one CONNECT tunnel, SOCKS5 connection or plain
// HTTP request), and nothing else. A line from a VM is parsed into it, so
// a field the contract does not have is dropped, and one of the wrong type
// drops the line.
type AccessLine struct {
	Time       time.Time `json:"time"`
	Source     string    `json:"source"`
	User       string    `json:"user,omitempty"`
	Protocol   string    `json:"protocol"`
	Method     string    `json:"method,omitempty"`
	Host       string    `json:"host,omitempty"`
	Port       int       `json:"port,omitempty"`
	Status     int       `json:"status"`
	BytesIn    int64     `json:"bytesIn"`
	BytesOut   int64     `json:"bytesOut"`
	DurationMs int64     `json:"durationMs"`
	Reason     string    `json:"reason,omitempty"`
}

// maxField bounds each text field a VM sends.
const maxField = 512

func parseLine(raw json.RawMessage) (AccessLine, error) {
	var l AccessLine
	d := json.NewDecoder(bytes.NewReader(raw))
	if err := d.Decode(&l); err != nil {
		return AccessLine{}, err
	}
	for _, f := range []string{l.Source, l.User, l.Protocol, l.Method, l.Host, l.Reason} {
		if len(f) > maxField {
			return AccessLine{}, fmt.Errorf("a field of %d bytes", len(f))
		}
	}
	if l.Time.IsZero() || l.Protocol == "" {
		return AccessLine{}, fmt.Errorf("a line without its time or protocol")
	}
	return l, nil
}
