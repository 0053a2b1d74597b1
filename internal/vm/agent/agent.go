package agent

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/egress-proxies/egress/internal/vm/engine"
	"github.com/egress-proxies/egress/internal/vm/imds"
	"github.com/egress-proxies/egress/internal/vm/vmconfig"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Host is what the agent asks of the VM's system: load the kernel filter
// from a file, and have the engine read its configuration file again.
type Host interface {
	LoadFilter(ctx context.Context, path string) error
	// ReloadEngine reloads the running engine (SIGHUP), or starts it.
	ReloadEngine(ctx context.Context) error
}

// Agent applies the engine's configuration from the metadata server.
type Agent struct {
	// Metadata is GCE's metadata server: what Run follows, and, without a
	// Reporter, where the agent reads the probe target, writes the guest
	// attributes and calls home.
	Metadata *Metadata
	// Reporter, when set, is where the agent reads the probe target and
	// says what the VM serves instead (a cloud-init boot's Boot).
	Reporter Reporter
	Host     Host
	// Dir holds config.json (the engine's) and filter.nft.
	Dir string
	// ProxyUID is the engine's system user, whose packets the egress
	// filter matches; ConfigGID its group, which may read config.json
	// (-1: leave the group as it is).
	ProxyUID, ConfigGID int
	// Resolvers the engine may reach on port 53.
	Resolvers []netip.Addr
	// Forbidden is the address a self-test CONNECT must not reach (the
	// metadata server, 169.254.169.254:80).
	Forbidden string
	// WatchTimeout is timeout_sec of each wait for a change.
	WatchTimeout time.Duration
	// SelfTestWindow is how long a self-test waits for the engine to
	// answer as a configuration says (SelfTest.Window); 0 is
	// DefaultSelfTestWindow.
	SelfTestWindow time.Duration
	// IP runs ip(8) with args and returns its output: how the agent
	// routes the configuration's IPv6 prefix to the VM itself
	// (prefix.go). Nil: a configuration with a prefix fails.
	IP func(ctx context.Context, args ...string) ([]byte, error)
	// IMDS, where the VM's metadata service is EC2's (a cloud-init
	// boot's setting egress-imds: Boot.IMDS), is where a configuration
	// that draws IPv6 sources from a prefix it does not name finds it:
	// EC2's delegated prefix is not around the VM's address
	// (findprefix.go). Nil elsewhere.
	IMDS *imds.Client
	// HTTP publishes the call-home; nil is http.DefaultClient.
	HTTP *http.Client
	Log  *slog.Logger
}

// Files of Dir.
const (
	ConfigFile = "config.json"
	FilterFile = "filter.nft"
)

// Apply serves text, the engine's configuration as the metadata carries
// it: see the package doc. With rollback, a failure puts back the
// configuration served before; without (the first boot), it leaves the VM
// failed. Either way the failure is written to egress/error and reported
// by a call-home.
func (a *Agent) Apply(ctx context.Context, text string, rollback bool) error {
	prevConfig, errC := os.ReadFile(filepath.Join(a.Dir, ConfigFile))
	// A change refused before anything is touched leaves the
	// configuration served before served.
	untouched := rollback && errC == nil
	text, err := a.withPrefix(ctx, strings.TrimSpace(text))
	if err != nil {
		return a.failed(ctx, -1, err, untouched)
	}
	cfg, err := engine.ReadConfig([]byte(text))
	if err != nil {
		return a.failed(ctx, -1, err, untouched)
	}
	prevFilter, errF := os.ReadFile(filepath.Join(a.Dir, FilterFile))
	canRollBack := rollback && errC == nil && errF == nil
	if err := a.serve(ctx, cfg, text); err != nil {
		if errC == nil {
			// A prefix this configuration routed, which the one before
			// did not name, goes with it.
			if prev, perr := engine.ReadConfig(prevConfig); perr == nil {
				a.withdrawPrefix(ctx, []byte(text), prev)
			}
		}
		if canRollBack {
			if rerr := a.restore(ctx, prevConfig, prevFilter); rerr != nil {
				a.Log.Error("could not put back the configuration served before", slog.Any("error", rerr))
				canRollBack = false
			}
		}
		return a.failed(ctx, cfg.Generation, err, canRollBack)
	}
	if errC == nil {
		a.withdrawPrefix(ctx, prevConfig, cfg)
	}
	if err := a.reporter().Ready(ctx, cfg.Generation); err != nil {
		return err
	}
	a.Log.Info("serving", slog.Int64("generation", cfg.Generation), slog.Int("users", len(cfg.Users)))
	return nil
}

// Reporter is where the agent reads what its self-test probes and says
// what the VM serves: on GCE the metadata server (the attribute
// egress-probe-target; the guest attributes egress/ready and
// egress/error, and a call-home), on a cloud-init boot files (Boot).
type Reporter interface {
	// ProbeTarget is the host:port the self-test reaches through the
	// proxy, "" for vmconfig.DefaultProbeTarget.
	ProbeTarget(ctx context.Context) (string, error)
	// Ready says the VM serves generation.
	Ready(ctx context.Context, generation int64) error
	// Failed says why the VM cannot serve generation (-1: a configuration
	// that did not load), in one line; servedStill says that the VM
	// serves the configuration it served before (a change refused). It is
	// best effort: a failure to say so is logged.
	Failed(ctx context.Context, generation int64, reason string, servedStill bool)
}

func (a *Agent) reporter() Reporter {
	if a.Reporter != nil {
		return a.Reporter
	}
	return guestAttributes{a}
}

// guestAttributes is GCE's Reporter: the metadata server's attributes and
// guest attributes, and the call-home on Pub/Sub with the VM's token.
type guestAttributes struct{ a *Agent }

func (g guestAttributes) ProbeTarget(ctx context.Context) (string, error) {
	return g.a.Metadata.Attr(ctx, vmconfig.KeyProbeTarget)
}

func (g guestAttributes) Ready(ctx context.Context, generation int64) error {
	a := g.a
	if err := a.Metadata.DeleteGuest(ctx, vmconfig.GuestError); err != nil {
		a.Log.Warn("could not clear egress/error", slog.Any("error", err))
	}
	if err := a.Metadata.PutGuest(ctx, vmconfig.GuestReady, strconv.FormatInt(generation, 10)); err != nil {
		return fmt.Errorf("agent: writing egress/ready: %w", err)
	}
	a.callHome(ctx, "ready")
	return nil
}

func (g guestAttributes) Failed(ctx context.Context, _ int64, reason string, _ bool) {
	a := g.a
	if err := a.Metadata.PutGuest(ctx, vmconfig.GuestError, reason); err != nil {
		a.Log.Error("cannot write egress/error", slog.Any("error", err))
	}
	a.callHome(ctx, "boot-failed")
}

// serve loads the filter and the configuration with a self-test user,
// proves them, then drops the user.
func (a *Agent) serve(ctx context.Context, cfg vmconfig.Config, text string) error {
	filter, err := Filter(cfg, a.ProxyUID, a.Resolvers)
	if err != nil {
		return err
	}
	if err := a.write(FilterFile, []byte(filter)); err != nil {
		return err
	}
	if err := a.Host.LoadFilter(ctx, filepath.Join(a.Dir, FilterFile)); err != nil {
		return fmt.Errorf("the rendered nftables rules do not load: %w", err)
	}
	// Before the engine reads the configuration: its first connection
	// may leave from an address of the prefix.
	if err := a.routePrefix(ctx, cfg); err != nil {
		return err
	}
	st, err := a.selfTest(ctx, cfg)
	if err != nil {
		return err
	}
	hash, err := vmconfig.NewPasswordHash(st.Password)
	if err != nil {
		return err
	}
	testing := cfg
	testing.Users = append([]vmconfig.User{{Name: st.User, PasswordHash: hash}}, cfg.Users...)
	body, err := json.Marshal(testing)
	if err != nil {
		return err
	}
	if err := a.write(ConfigFile, body); err != nil {
		return err
	}
	if err := a.Host.ReloadEngine(ctx); err != nil {
		return fmt.Errorf("the engine did not reload: %w", err)
	}
	if err := st.Serving(ctx); err != nil {
		return err
	}
	if err := a.write(ConfigFile, []byte(text+"\n")); err != nil {
		return err
	}
	if err := a.Host.ReloadEngine(ctx); err != nil {
		return fmt.Errorf("the engine did not reload: %w", err)
	}
	return st.Dropped(ctx)
}

// selfTest makes the self-test of cfg: a user and password of its own,
// the probe target the metadata names.
func (a *Agent) selfTest(ctx context.Context, cfg vmconfig.Config) (SelfTest, error) {
	host, port, err := net.SplitHostPort(cfg.Listen)
	if err != nil {
		return SelfTest{}, fmt.Errorf("listen %q is not host:port: %w", cfg.Listen, err)
	}
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "127.0.0.1"
	}
	probe, err := a.reporter().ProbeTarget(ctx)
	if err != nil {
		return SelfTest{}, err
	}
	if probe == "" {
		probe = vmconfig.DefaultProbeTarget
	}
	if !probePattern.MatchString(probe) {
		return SelfTest{}, fmt.Errorf("egress-probe-target is not host:port")
	}
	return SelfTest{Proxy: net.JoinHostPort(host, port), Probe: probe, ConnectPorts: cfg.ConnectPorts, Forbidden: a.Forbidden,
		User: "selftest" + randomWord(6), Password: randomWord(24), Window: a.SelfTestWindow}, nil
}

var probePattern = regexp.MustCompile(`^[A-Za-z0-9.-]+:[0-9]{1,5}$`)

func randomWord(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// write replaces a file of Dir whole: written beside it, then renamed, so
// the engine never reads half of one. Readable by root and the engine's
// group only: config.json holds password hashes.
func (a *Agent) write(name string, body []byte) error {
	path := filepath.Join(a.Dir, name)
	tmp := path + ".new"
	if err := os.WriteFile(tmp, body, 0o640); err != nil {
		return err
	}
	if a.ConfigGID >= 0 {
		if err := os.Chown(tmp, -1, a.ConfigGID); err != nil {
			return err
		}
	}
	if err := os.Chmod(tmp, 0o640); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// restore puts back the files served before and has the engine and the
// kernel read them.
func (a *Agent) restore(ctx context.Context, config, filter []byte) error {
	if err := a.write(FilterFile, filter); err != nil {
		return err
	}
	if err := a.write(ConfigFile, config); err != nil {
		return err
	}
	return errors.Join(a.Host.LoadFilter(ctx, filepath.Join(a.Dir, FilterFile)), a.Host.ReloadEngine(ctx))
}

// failed reports a configuration that could not be served, with a
// one-line reason (on GCE egress/error and a call-home boot-failed).
// generation -1 is one that did not load.
func (a *Agent) failed(ctx context.Context, generation int64, cause error, rolledBack bool) error {
	reason := cause.Error()
	if generation >= 0 {
		reason = fmt.Sprintf("generation %d: %s", generation, reason)
	}
	if rolledBack {
		reason += "; the configuration served before is served still"
	}
	reason = oneLine(reason)
	a.Log.Error("configuration not applied", slog.String("reason", reason))
	a.reporter().Failed(ctx, generation, reason, rolledBack)
	return fmt.Errorf("agent: %s", reason)
}

func oneLine(s string) string {
	s = strings.Map(func(r rune) rune {
		if r < ' ' || r > '~' {
			return ' '
		}
		return r
	}, s)
	if len(s) > 200 {
		s = s[:200]
	}
	return s
}

var (
	topicPattern    = regexp.MustCompile(`^projects/[a-z][-a-z0-9.:]{4,61}[a-z0-9]/topics/[A-Za-z][-A-Za-z0-9._~%+]{2,254}$`)
	endpointPattern = regexp.MustCompile(`^https?://[A-Za-z0-9.-]+(:[0-9]{1,5})?$`)
	labelPattern    = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`)
	uidPattern      = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)
)

// callHome publishes {namespace, name, uid, reason} on the call-home
// topic with the VM's token, the identity read now: a claim changes it.
// Only a hint: a lost one is found by the reconciler's sweep.
func (a *Agent) callHome(ctx context.Context, reason string) {
	attr := func(k string) string { v, _ := a.Metadata.Attr(ctx, k); return v }
	topic := attr(vmconfig.KeyCallHomeTopic)
	if topic == "" {
		return
	}
	endpoint := attr(vmconfig.KeyPubSubEndpoint)
	if endpoint == "" {
		endpoint = vmconfig.DefaultPubSubEndpoint
	}
	// A warm pool's VM (KeyPool set) is the member pools/{pool}/proxies/{name}
	// and has no namespace; a proxy's VM names its namespace.
	msg := map[string]string{"name": attr(vmconfig.KeyName), "uid": attr(vmconfig.KeyUID), "reason": reason}
	owner := "namespace"
	if pool := attr(vmconfig.KeyPool); pool != "" {
		owner = "pool"
		msg[owner] = pool
	} else {
		msg[owner] = attr(vmconfig.KeyNamespace)
	}
	if !topicPattern.MatchString(topic) || !endpointPattern.MatchString(endpoint) || !labelPattern.MatchString(msg[owner]) ||
		!labelPattern.MatchString(msg["name"]) || !uidPattern.MatchString(msg["uid"]) {
		a.Log.Warn("the call-home attributes are not valid; not calling home")
		return
	}
	data, _ := json.Marshal(msg)
	if err := a.publish(ctx, endpoint, topic, data, nil); err != nil {
		a.Log.Warn("could not call home; the reconciler's sweep will look", slog.String("topic", topic), slog.Any("error", err))
		return
	}
	a.Log.Info("called home", slog.String("topic", topic), slog.String("reason", reason))
}

// publish publishes data on topic with the VM's access token, and its
// identity token for the topic as the message's "identity" attribute: the
// control plane drops a call-home without one (internal/callhome).
func (a *Agent) publish(ctx context.Context, endpoint, topic string, data []byte, attributes map[string]string) error {
	token, err := a.Metadata.Token(ctx)
	if err != nil {
		return err
	}
	identity, err := a.Metadata.Identity(ctx, topic)
	if err != nil {
		return err
	}
	attrs := map[string]string{vmconfig.IdentityAttribute: identity}
	for k, v := range attributes {
		attrs[k] = v
	}
	body, _ := json.Marshal(map[string]any{"messages": []map[string]any{{"data": base64.StdEncoding.EncodeToString(data), "attributes": attrs}}})
	c := a.HTTP
	if c == nil {
		c = http.DefaultClient
	}
	var last error
	for attempt := range 5 {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(time.Duration(attempt) * time.Second):
			}
		}
		rctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		req, err := http.NewRequestWithContext(rctx, http.MethodPost, endpoint+"/v1/"+topic+":publish", bytes.NewReader(body))
		if err != nil {
			cancel()
			return err
		}
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := c.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode/100 == 2 {
				cancel()
				return nil
			}
			err = fmt.Errorf("publish: %s", resp.Status)
		}
		cancel()
		last = err
	}
	return last
}

// Run follows egress-config until ctx ends, applying each value that is
// not the one served (config.json) nor one that failed already.
func (a *Agent) Run(ctx context.Context) error {
	etag, failedText := "", ""
	backoff := time.Second
	for ctx.Err() == nil {
		text, tag, err := a.Metadata.Watch(ctx, vmconfig.KeyConfig, etag, a.WatchTimeout)
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			a.Log.Warn("waiting for egress-config", slog.Any("error", err), slog.Duration("retryIn", backoff))
			select {
			case <-ctx.Done():
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, 30*time.Second)
			etag = ""
			continue
		}
		backoff = time.Second
		if tag == etag && etag != "" {
			continue
		}
		etag = tag
		text = strings.TrimSpace(text)
		served, _ := os.ReadFile(filepath.Join(a.Dir, ConfigFile))
		if text == strings.TrimSpace(string(served)) || text == failedText {
			continue
		}
		if err := a.Apply(ctx, text, true); err != nil {
			failedText = text
			continue
		}
		failedText = ""
	}
	return ctx.Err()
}
