// Package imdsmock runs AWS's own mock of EC2's instance metadata service,
// amazon-ec2-metadata-mock (github.com/aws/amazon-ec2-metadata-mock), in
// the test's process: its own command (root.NewCmd) with a configuration
// file this package writes, on a loopback port. Tests of the VM side read
// IMDS through it rather than through a stand-in of ours: the IMDSv2
// token (PUT /latest/api/token), the refusal of a GET without one, the
// paths and their answers are AWS's.
//
// One path the mock does not serve (v1.13.0 has no
// network/interfaces/macs/MAC/ipv6-prefix, the IPv6 prefixes delegated
// to an interface) is served by this package in front of it
// (Config.IPv6Prefixes), after the mock took the request's token as it
// takes any: on a path of the mock's, with the request's headers.
//
// The mock keeps its routes and its configuration in package-level
// state (cobra, viper, its router), so a process runs one: Start runs it
// once, and a second Start with another configuration is refused.
package imdsmock

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	neturl "net/url"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/amazon-ec2-metadata-mock/pkg/cmd/root"
)

// Config is what the mock serves beside its defaults.
type Config struct {
	// InstanceID, Zone and Region are meta-data/instance-id,
	// meta-data/placement/availability-zone and placement/region.
	InstanceID, Zone, Region string
	// Hostname is meta-data/hostname and local-hostname; empty keeps the
	// mock's.
	Hostname string
	// ImageID, InstanceType and PrivateIP are the instance's, in the
	// instance identity document beside its id, zone and region (which
	// cloud-init reads its instance id from on AWS); empty keeps the
	// mock's.
	ImageID, InstanceType, PrivateIP string
	// UserData is /latest/user-data, as the instance was launched with.
	UserData []byte
	// IMDSv1 allows requests without a token; false is IMDSv2 only, as
	// the aws provider launches its instances (HttpTokens=required).
	IMDSv1 bool
	// MAC is the primary interface's MAC address (meta-data/mac, and the
	// MAC of the network/interfaces/macs/ paths); empty keeps the mock's.
	MAC string
	// IPv6Prefixes are the IPv6 prefixes delegated to the primary
	// interface (CIDRs), network/interfaces/macs/MAC/ipv6-prefix one a
	// line; none: that path answers 404, as EC2's does for an interface
	// without one.
	IPv6Prefixes []string
}

var (
	mu      sync.Mutex
	running *Config
	url     string
)

// Start runs the mock with cfg, in dir (its configuration file), and
// returns its base URL (http://127.0.0.1:PORT). The mock runs until the
// process ends.
func Start(ctx context.Context, dir string, cfg Config) (string, error) {
	mu.Lock()
	defer mu.Unlock()
	if running != nil {
		if reflect.DeepEqual(*running, cfg) {
			return url, nil
		}
		return "", errors.New("imdsmock: the metadata mock runs already, with another configuration: a process runs one")
	}
	port, err := freePort()
	if err != nil {
		return "", err
	}
	values := map[string]any{}
	set := func(k, v string) {
		if v != "" {
			values[k] = v
		}
	}
	set("instance-id", cfg.InstanceID)
	set("placement-availability-zone", cfg.Zone)
	set("placement-region", cfg.Region)
	set("hostname", cfg.Hostname)
	set("local-hostname", cfg.Hostname)
	// The identity document whole: the mock takes it as one value.
	identity := map[string]any{"accountId": "123456789012", "imageId": "ami-0b69ea66ff7391e80", "availabilityZone": "us-east-1f",
		"ramdiskId": nil, "kernelId": nil, "devpayProductCodes": nil, "marketplaceProductCodes": nil, "version": "2017-09-30",
		"privateIp": "10.0.7.10", "billingProducts": nil, "instanceId": "i-1234567890abcdef0", "pendingTime": "2019-10-31T07:02:24Z",
		"architecture": "x86_64", "instanceType": "m4.xlarge", "region": "us-east-1"}
	for k, v := range map[string]string{"instanceId": cfg.InstanceID, "availabilityZone": cfg.Zone, "region": cfg.Region,
		"imageId": cfg.ImageID, "instanceType": cfg.InstanceType, "privateIp": cfg.PrivateIP} {
		if v != "" {
			identity[k] = v
		}
	}
	set("instance-type", cfg.InstanceType)
	set("ami-id", cfg.ImageID)
	set("local-ipv4", cfg.PrivateIP)
	set("mac", cfg.MAC)
	doc := map[string]any{
		"metadata": map[string]any{"values": values},
		"dynamic":  map[string]any{"values": map[string]any{"instance-identity-document": identity}},
		"userdata": map[string]any{"values": map[string]any{"userdata": base64.StdEncoding.EncodeToString(cfg.UserData)}},
		"imdsv2":   !cfg.IMDSv1,
		"server":   map[string]any{"hostname": "127.0.0.1", "port": strconv.Itoa(port)},
	}
	b, err := json.Marshal(doc)
	if err != nil {
		return "", err
	}
	file := filepath.Join(dir, "aemm-config.json")
	if err := os.WriteFile(file, b, 0o600); err != nil {
		return "", err
	}
	cmd := root.NewCmd()
	cmd.SetArgs([]string{"--config-file", file})
	go func() {
		// It serves until the process ends; a failure to listen panics in
		// the mock, which ends the test binary with the reason.
		_ = cmd.Execute()
	}()
	mockBase := "http://127.0.0.1:" + strconv.Itoa(port)
	if err := waitServing(ctx, mockBase); err != nil {
		return "", err
	}
	base, err := serveFront(mockBase, cfg.IPv6Prefixes)
	if err != nil {
		return "", err
	}
	c := cfg
	running, url = &c, base
	return base, nil
}

// freePort is a loopback port no one listens on now.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// waitServing waits until the mock answers a token request.
func waitServing(ctx context.Context, base string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPut, base+"/latest/api/token", nil)
		req.Header.Set("X-aws-ec2-metadata-token-ttl-seconds", "60")
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("imdsmock: the metadata mock does not answer at %s: %v", base, err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// ipv6PrefixPath is the path of an interface's delegated IPv6 prefixes;
// its group is the MAC.
var ipv6PrefixPath = regexp.MustCompile(`^/latest/meta-data/network/interfaces/macs/([^/]+)/ipv6-prefix$`)

// serveFront serves, on a loopback port of its own until the process
// ends, the mock at mockBase and in front of it the path of the primary
// interface's IPv6 prefixes, which the mock lacks: the mock's answer to
// the request's headers on its own path of the primary interface's MAC
// (a 401 without a token it issued), then prefixes, one a line, if the
// MAC is that one and it has any, or 404. It returns its base URL.
func serveFront(mockBase string, prefixes []string) (string, error) {
	u, err := neturl.Parse(mockBase)
	if err != nil {
		return "", err
	}
	proxy := httputil.NewSingleHostReverseProxy(u)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		m := ipv6PrefixPath.FindStringSubmatch(r.URL.Path)
		if m == nil {
			proxy.ServeHTTP(w, r)
			return
		}
		probe, err := http.NewRequestWithContext(r.Context(), r.Method, mockBase+"/latest/meta-data/mac", nil)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		probe.Header = r.Header.Clone()
		resp, err := http.DefaultClient.Do(probe)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		mac, err := io.ReadAll(resp.Body)
		switch {
		case err != nil:
			http.Error(w, err.Error(), http.StatusBadGateway)
		case resp.StatusCode != http.StatusOK:
			w.WriteHeader(resp.StatusCode)
			_, _ = w.Write(mac)
		case strings.TrimSpace(string(mac)) != m[1] || len(prefixes) == 0:
			http.NotFound(w, r)
		default:
			w.Header().Set("Content-Type", "text/plain")
			_, _ = io.WriteString(w, strings.Join(prefixes, "\n"))
		}
	})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	go func() { _ = http.Serve(l, h) }()
	return "http://" + l.Addr().String(), nil
}
