package callhome

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/egress-proxies/egress/internal/vm/vmconfig"
)

// maxField bounds each text field a VM sends.
const maxField = 512

// parseLine reads one of a VM's lines into the contract's AccessLine
// (vmconfig): a field the contract does not have is dropped, one of the
// wrong type drops the line.
func parseLine(raw json.RawMessage) (vmconfig.AccessLine, error) {
	var l vmconfig.AccessLine
	d := json.NewDecoder(bytes.NewReader(raw))
	if err := d.Decode(&l); err != nil {
		return vmconfig.AccessLine{}, err
	}
	if err := CheckLine(l); err != nil {
		return vmconfig.AccessLine{}, err
	}
	return l, nil
}

// CheckLine checks a VM's line against what the log takes: no text field
// beyond maxField bytes, and a time and a protocol. A VM's line that
// fails it is dropped, whichever way it came (a call-home, or a pull).
func CheckLine(l vmconfig.AccessLine) error {
	for _, f := range []string{l.Source, l.User, l.Session, l.SourceAddress, l.Protocol, l.Method, l.Host, l.Reason} {
		if len(f) > maxField {
			return fmt.Errorf("a field of %d bytes", len(f))
		}
	}
	if l.Time.IsZero() || l.Protocol == "" {
		return fmt.Errorf("a line without its time or protocol")
	}
	return nil
}
