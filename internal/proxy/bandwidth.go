package proxy

import (
	"fmt"
	"regexp"
	"strconv"
)

// A bandwidth limit is written as a whole number and a unit of bits per
// second, in SI multiples as network links are rated: "100Mbit" is
// 100,000,000 bits per second through the proxy in each direction: the
// engine keeps one bucket a direction.
// Bytes are not accepted: a limit of "100M" or "100MB/s" would be read
// eight times apart by two people, and a link's rating is in bits.
const (
	Kbit = 1_000
	Mbit = 1_000_000
	Gbit = 1_000_000_000
)

// The bounds of a bandwidth limit. Below MinBandwidth a proxy is of no use
// (its own self-test and a TLS handshake crawl); above MaxBandwidth no VM
// carries it, so a larger figure is a typo, not a limit.
const (
	MinBandwidth = 1 * Mbit
	MaxBandwidth = 100 * Gbit
)

var bandwidthRE = regexp.MustCompile(`^([0-9]{1,12})(Kbit|Mbit|Gbit)$`)

var bandwidthUnits = map[string]int64{"Kbit": Kbit, "Mbit": Mbit, "Gbit": Gbit}

// BandwidthError says why a bandwidth limit was refused: its form
// (Reason ReasonBandwidthInvalid) or its size (ReasonBandwidthOutOfRange).
type BandwidthError struct {
	Value, Reason, Description string
}

func (e *BandwidthError) Error() string {
	return fmt.Sprintf("bandwidth limit %q: %s", e.Value, e.Description)
}

// ParseBandwidth reads a bandwidth limit such as "100Mbit", "1500Kbit" or
// "2Gbit" (a whole number and Kbit, Mbit or Gbit, case as written) into
// bits per second, within MinBandwidth and MaxBandwidth. Anything else is
// a *BandwidthError.
func ParseBandwidth(s string) (int64, error) {
	m := bandwidthRE.FindStringSubmatch(s)
	if m == nil {
		return 0, &BandwidthError{Value: s, Reason: ReasonBandwidthInvalid,
			Description: "is not a bandwidth such as 100Mbit: a whole number and Kbit, Mbit or Gbit (bits per second, SI: 1Mbit is 1,000,000)"}
	}
	n, _ := strconv.ParseInt(m[1], 10, 64) // at most 12 digits: no overflow
	bps := n * bandwidthUnits[m[2]]
	if bps < MinBandwidth || bps > MaxBandwidth {
		return 0, &BandwidthError{Value: s, Reason: ReasonBandwidthOutOfRange,
			Description: fmt.Sprintf("is outside %s to %s", FormatBandwidth(MinBandwidth), FormatBandwidth(MaxBandwidth))}
	}
	return bps, nil
}

// FormatBandwidth writes bits per second in the largest unit that keeps
// it whole: 100000000 is "100Mbit".
func FormatBandwidth(bps int64) string {
	for _, u := range []struct {
		name string
		size int64
	}{{"Gbit", Gbit}, {"Mbit", Mbit}, {"Kbit", Kbit}} {
		if bps != 0 && bps%u.size == 0 {
			return strconv.FormatInt(bps/u.size, 10) + u.name
		}
	}
	return strconv.FormatInt(bps, 10) + "bit"
}
