// Command render-bootstrap prints the startup script the gcp provider would
// send for a proxy, rendered by bootstrap.Render, so that a reader can see
// exactly what a VM runs at boot, or run it by hand on a Debian VM.
//
//	go run ./internal/provider/gcp/cmd/render-bootstrap --port 3128 --allow 203.0.113.0/24 [--allow …] \
//	    [--connect-port 443 …] [--deny 10.128.0.0/9 …] --user U --password P \
//	    [--socks5-port 1080 [--socks5-udp]] [--bandwidth-limit 100Mbit] [--access-log=false] \
//	    [--probe-target host:port] [--engine-url URL --engine-sha256 HEX]
//
// With --config it prints the proxy engine's configuration (egress-config)
// instead. With --metadata it prints every metadata item of the instance the
// gcp provider would insert, one KEY=VALUE a line, in the provider's order;
// a value with a line break in it (the script) is printed Go-quoted, so
// that each item stays one line. The items are read back from the insert
// request the real provider sends to the Compute fake (on loopback), so
// they are the provider's, not a copy of its rules. --call-home-topic,
// --pubsub-endpoint, --namespace, --name and --uid fill in the call-home
// attributes, which the provider sets only when a topic is configured.
package main

import (
	"encoding/json"

	"context"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"

	"google.golang.org/api/option"

	"github.com/egress-proxies/egress/internal/bootstrap"
	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/provider/gcp"
	"github.com/egress-proxies/egress/internal/provider/gcp/computefake"
	"github.com/egress-proxies/egress/internal/proxy"
	"github.com/egress-proxies/egress/internal/vm/vmconfig"
)

// list is a flag that may be given more than once.
type list []string

func (l *list) String() string     { return strings.Join(*l, ",") }
func (l *list) Set(v string) error { *l = append(*l, v); return nil }

func main() {
	var allow, connectPorts, deny list
	port := flag.Int("port", int(proxy.DefaultPort), "the proxy's port")
	flag.Var(&allow, "allow", "an allowed source range (CIDR); repeat for more")
	flag.Var(&deny, "deny", "a range no proxy may reach beyond the built-in ones (EGRESS_DENY_RANGES); repeat for more")
	flag.Var(&connectPorts, "connect-port", "a port CONNECT may reach; repeat for more (default 443 and 80)")
	socks5 := flag.Int("socks5-port", 0, "the port the engine serves SOCKS5 on (spec.socks5Port; default none)")
	socks5UDP := flag.Bool("socks5-udp", false, "carry SOCKS5 UDP ASSOCIATE on the SOCKS5 port's number (spec.socks5UDP)")
	ipv6Egress := flag.String("ipv6-egress", "", "how connections to IPv6 destinations pick their source: off, single, perConnection or perSession (spec.ipv6Egress; default none said)")
	ipv6Prefix := flag.String("ipv6-prefix", "", "the VM's routed IPv6 prefix, a CIDR (status.ipv6Prefix; default none: the agent takes it from the interface)")
	bandwidth := flag.String("bandwidth-limit", "", "the proxy's bandwidth limit, e.g. 100Mbit (spec.bandwidthLimit; default none)")
	accessLog := flag.Bool("access-log", true, "whether the engine keeps its access log (spec.accessLog)")
	user := flag.String("user", "", "the proxy's username (letters and digits)")
	password := flag.String("password", "", "the proxy's password (16-128 letters and digits)")
	probe := flag.String("probe-target", "", "host:port the self-test CONNECTs to (default "+vmconfig.DefaultProbeTarget+")")
	engineURL := flag.String("engine-url", "", "with --metadata: the proxy engine's object URL (PROXY_ENGINE_URL)")
	engineSHA := flag.String("engine-sha256", "", "with --metadata: its SHA-256 (PROXY_ENGINE_SHA256)")
	printConfig := flag.Bool("config", false, "print the proxy engine's configuration, the egress-config metadata item")
	metadata := flag.Bool("metadata", false, "print every metadata item the gcp provider would set, as KEY=VALUE lines")
	topic := flag.String("call-home-topic", "", "with --metadata: the call-home topic, projects/P/topics/T")
	endpoint := flag.String("pubsub-endpoint", "", "with --metadata: the Pub/Sub REST API the VM publishes to")
	namespace := flag.String("namespace", "default", "with --metadata: the proxy's namespace")
	name := flag.String("name", "proxy", "with --metadata: the proxy's name")
	uid := flag.String("uid", "00000000-0000-4000-8000-000000000000", "with --metadata: the proxy document's uid")
	flag.Parse()
	if flag.NArg() > 0 {
		fail(fmt.Errorf("unexpected arguments %q", flag.Args()))
	}

	cfg := bootstrap.Config{Port: int32(*port), Socks5Port: int32(*socks5), Socks5UDP: *socks5UDP, IPv6Egress: proxy.IPv6Egress(*ipv6Egress), IPv6Prefix: *ipv6Prefix, BandwidthLimit: *bandwidth, AccessLogOff: !*accessLog,
		AllowedSourceRanges: allow, Credentials: proxy.Credentials{Username: *user, Password: *password}, DenyRanges: deny, Generation: 1}
	for _, p := range connectPorts {
		n, err := strconv.ParseInt(p, 10, 32)
		if err != nil {
			fail(fmt.Errorf("--connect-port %q: %w", p, err))
		}
		cfg.ConnectPorts = append(cfg.ConnectPorts, int32(n))
	}
	script, err := bootstrap.Render(cfg)
	if err != nil {
		fail(err)
	}
	engine, err := bootstrap.EngineConfig(cfg)
	if err != nil {
		fail(err)
	}
	switch {
	case *printConfig:
		out, _ := json.MarshalIndent(engine, "", "  ")
		fmt.Println(string(out))
		return
	case !*metadata:
		fmt.Print(script)
		return
	}
	items, err := providerMetadata(gcp.Config{Project: "render-bootstrap", ProbeTarget: *probe,
		CallHomeTopic: *topic, PubSubEndpoint: *endpoint, EngineURL: *engineURL, EngineSHA256: *engineSHA},
		provider.CreateRequest{Name: provider.NameFromUID(*uid), UID: *uid, Namespace: *namespace, ProxyName: *name,
			Placement: provider.Placement{Region: "us-central1", Zone: "us-central1-a"}, Port: int32(*port),
			StartupScript: script, Engine: &engine})
	if err != nil {
		fail(err)
	}
	for _, kv := range items {
		v := kv[1]
		if strings.ContainsAny(v, "\r\n") {
			v = strconv.Quote(v)
		}
		fmt.Printf("%s=%s\n", kv[0], v)
	}
}

// providerMetadata is the metadata of the instance the gcp provider inserts
// for req, as the Compute fake received it.
func providerMetadata(cfg gcp.Config, req provider.CreateRequest) ([][2]string, error) {
	ctx := context.Background()
	fake := computefake.New()
	defer fake.Close()
	clients, err := gcp.NewClients(ctx, option.WithEndpoint(fake.URL), option.WithoutAuthentication())
	if err != nil {
		return nil, err
	}
	defer clients.Close()
	p, err := gcp.New(clients, cfg)
	if err != nil {
		return nil, err
	}
	if _, err := p.Create(ctx, req); err != nil {
		return nil, fmt.Errorf("the gcp provider's Create: %w", err)
	}
	inserts := fake.Inserts()
	if len(inserts) != 1 {
		return nil, fmt.Errorf("the Compute fake got %d inserts, want 1", len(inserts))
	}
	var out [][2]string
	for _, it := range inserts[0].Instance.GetMetadata().GetItems() {
		out = append(out, [2]string{it.GetKey(), it.GetValue()})
	}
	return out, nil
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "render-bootstrap:", err)
	os.Exit(2)
}
