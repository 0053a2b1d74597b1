package proxy

import (
	"fmt"
	"regexp"
	"strconv"
)

// A traffic quota is written as a whole number and a unit of bytes: SI
// (MB, GB, TB: 1GB is 1,000,000,000 bytes, as Hetzner and AWS count the
// traffic they bill) or binary (MiB, GiB, TiB: 1GiB is 2^30 bytes, as
// Google Cloud counts it). It bounds the bytes the proxy carries in a
// calendar month (UTC), both directions together: what went to the
// clients and what went to their destinations, the bytes that leave the
// VM and that a cloud bills as egress.
const (
	MB  = 1_000_000
	GB  = 1_000_000_000
	TB  = 1_000_000_000_000
	MiB = 1 << 20
	GiB = 1 << 30
	TiB = 1 << 40
)

// The bounds of a traffic quota. Below MinTrafficQuota a proxy is spent
// by its own self-tests; above MaxTrafficQuota (a petabyte) no VM carries
// it in a month, so a larger figure is a typo, not a quota.
const (
	MinTrafficQuota = 1 * MB
	MaxTrafficQuota = 1000 * TB
)

var trafficRE = regexp.MustCompile(`^([0-9]{1,7})(MB|GB|TB|MiB|GiB|TiB)$`)

var trafficUnits = map[string]int64{"MB": MB, "GB": GB, "TB": TB, "MiB": MiB, "GiB": GiB, "TiB": TiB}

// TrafficQuotaError says why a traffic quota was refused: its form
// (Reason ReasonTrafficQuotaInvalid) or its size
// (ReasonTrafficQuotaOutOfRange).
type TrafficQuotaError struct {
	Value, Reason, Description string
}

func (e *TrafficQuotaError) Error() string {
	return fmt.Sprintf("traffic quota %q: %s", e.Value, e.Description)
}

// ParseTrafficQuota reads a traffic quota such as "500GB", "2TB" or
// "100GiB" (a whole number and MB, GB, TB, MiB, GiB or TiB, case as
// written) into bytes, within MinTrafficQuota and MaxTrafficQuota.
// Anything else is a *TrafficQuotaError.
func ParseTrafficQuota(s string) (int64, error) {
	m := trafficRE.FindStringSubmatch(s)
	if m == nil {
		return 0, &TrafficQuotaError{Value: s, Reason: ReasonTrafficQuotaInvalid,
			Description: "is not an amount of bytes such as 500GB: a whole number and MB, GB, TB (SI: 1GB is 1,000,000,000 bytes) or MiB, GiB, TiB (binary)"}
	}
	n, _ := strconv.ParseInt(m[1], 10, 64) // at most 7 digits: no overflow
	b := n * trafficUnits[m[2]]
	if b < MinTrafficQuota || b > MaxTrafficQuota {
		return 0, &TrafficQuotaError{Value: s, Reason: ReasonTrafficQuotaOutOfRange,
			Description: fmt.Sprintf("is outside %s to %s", FormatBytes(MinTrafficQuota), FormatBytes(MaxTrafficQuota))}
	}
	return b, nil
}

// FormatBytes writes an amount of bytes in the largest SI unit that
// keeps it whole, or the binary one when only that does: 500000000000 is
// "500GB", 1073741824 "1GiB", 1234 "1234B".
func FormatBytes(b int64) string {
	for _, u := range []struct {
		name string
		size int64
	}{{"TB", TB}, {"GB", GB}, {"MB", MB}, {"TiB", TiB}, {"GiB", GiB}, {"MiB", MiB}} {
		if b != 0 && b%u.size == 0 {
			return strconv.FormatInt(b/u.size, 10) + u.name
		}
	}
	return strconv.FormatInt(b, 10) + "B"
}
