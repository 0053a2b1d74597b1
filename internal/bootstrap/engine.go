package bootstrap

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/egress-proxies/egress/internal/proxyengine"
)

// EngineConfig is the proxy engine's configuration for c (package
// proxyengine): the port on every address, the proxy's one user with a
// salted hash of its password, the spec's source ranges and CONNECT ports
// (checked and canonical, as the script gets them) and the VM's deny list.
// A new salt is drawn each time, so two renderings differ while both match
// the password. Nothing in it lets a reader use the proxy.
func EngineConfig(c Config) (proxyengine.Config, error) {
	r, err := c.check()
	if err != nil {
		return proxyengine.Config{}, err
	}
	hash, err := proxyengine.NewPasswordHash(r.Password)
	if err != nil {
		return proxyengine.Config{}, fmt.Errorf("bootstrap: %w", err)
	}
	ports := make([]int, len(r.ConnectPorts))
	for i, p := range r.ConnectPorts {
		ports[i] = int(p)
	}
	return proxyengine.Config{
		Generation:          1,
		Listen:              ":" + strconv.Itoa(int(r.Port)),
		Users:               []proxyengine.User{{Name: r.Username, PasswordHash: hash}},
		AllowedSourceRanges: slices.Concat(r.Allow4, r.Allow6),
		ConnectPorts:        ports,
		DenyDestinations:    slices.Clone(proxyengine.DefaultDenyDestinations),
	}, nil
}
