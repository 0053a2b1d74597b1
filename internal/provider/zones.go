package provider

import (
	"crypto/sha256"
	"encoding/binary"
	"slices"
)

// ChooseZone picks the zone of a region for a proxy whose placement names
// none: deterministically from its uid, so a retry of a create picks the
// same zone and proxies spread over the region's zones, skipping those in
// avoid (found out of capacity). It reports false when every zone is to be
// avoided. zones need not be sorted.
func ChooseZone(uid string, zones, avoid []string) (string, bool) {
	if len(zones) == 0 {
		return "", false
	}
	sorted := slices.Clone(zones)
	slices.Sort(sorted)
	sum := sha256.Sum256([]byte(uid))
	first := int(binary.BigEndian.Uint64(sum[:8]) % uint64(len(sorted)))
	for i := range sorted {
		z := sorted[(first+i)%len(sorted)]
		if !slices.Contains(avoid, z) {
			return z, true
		}
	}
	return "", false
}
