package agent

import (
	"bufio"
	"context"
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strconv"
	"time"
)

// SelfTest proves the engine serves a configuration, over loopback, with
// credentials of its own that the configuration under test carries.
type SelfTest struct {
	// Proxy is the engine's address on loopback.
	Proxy string
	// Probe is a host:port a CONNECT with credentials reaches when the
	// configuration allows its port (see Plan).
	Probe string
	// ConnectPorts are the ports the configuration under test allows.
	ConnectPorts []int
	// Forbidden is a host:port a CONNECT with credentials must not reach:
	// the metadata server.
	Forbidden string
	// User and Password are the self-test's credentials.
	User, Password string
	// Window is how long each of its questions is asked again until the
	// engine answers as it should (a restarted engine takes a moment to
	// listen); 0 is DefaultSelfTestWindow.
	Window time.Duration
}

// DefaultSelfTestWindow is how long a self-test waits for the engine: a
// configuration it has not taken by then is refused and the one served
// before is put back.
const DefaultSelfTestWindow = 30 * time.Second

// selfTestPause is the pause between two asks of a self-test's question.
const selfTestPause = 500 * time.Millisecond

// connect sends one CONNECT to target, with credentials when user is set,
// and returns the answer's status and its reason (X-Egress-Error, on a
// refusal).
func (st SelfTest) connect(ctx context.Context, target string, withCredentials bool) (int, string, error) {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", st.Proxy)
	if err != nil {
		return 0, "", err
	}
	defer c.Close()
	if dl, ok := ctx.Deadline(); ok {
		c.SetDeadline(dl)
	}
	head := "CONNECT " + target + " HTTP/1.1\r\nHost: " + target + "\r\n"
	if withCredentials {
		head += "Proxy-Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte(st.User+":"+st.Password)) + "\r\n"
	}
	if _, err := c.Write([]byte(head + "\r\n")); err != nil {
		return 0, "", err
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: http.MethodConnect})
	if err != nil {
		return 0, "", err
	}
	resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("X-Egress-Error"), nil
}

// poll asks until ok says yes or the attempts run out, and returns the
// last status and its reason.
func (st SelfTest) poll(ctx context.Context, target string, withCredentials bool, ok func(code int, why string) bool) (int, string, error) {
	var (
		code int
		why  string
		err  error
	)
	window := st.Window
	if window <= 0 {
		window = DefaultSelfTestWindow
	}
	for range max(1, int(window/selfTestPause)) {
		code, why, err = st.connect(ctx, target, withCredentials)
		if err == nil && ok(code, why) {
			return code, why, nil
		}
		select {
		case <-ctx.Done():
			return code, why, ctx.Err()
		case <-time.After(selfTestPause):
		}
	}
	return code, why, err
}

// Plan is what the self-test's first CONNECT, with its credentials, to
// the probe target must get: 200 when the configuration allows the
// probe's port, and otherwise 403, the engine refusing the port. A
// proxy's spec may allow only ports the probe target does not serve (a
// tenant who needs 8443 alone): such a configuration proves, instead of
// a path to the internet, that its own ports are what the engine
// enforces, and every spec the API accepts can be served. Either answer
// proves the engine took the configuration: until it has, the self-test's
// user gets 407.
func (st SelfTest) Plan() int {
	_, port, err := net.SplitHostPort(st.Probe)
	if p, perr := strconv.Atoi(port); err == nil && perr == nil && slices.Contains(st.ConnectPorts, p) {
		return http.StatusOK
	}
	return http.StatusForbidden
}

// Serving proves the configuration that carries the self-test's user is
// served: a CONNECT with its credentials to the probe target gets what
// Plan says (polled: the engine reloads on a signal, or is just
// starting), or the refusal of a proxy that carries no new connection
// (trafficRefusal), one without credentials 407, and one to the metadata
// server is refused.
func (st SelfTest) Serving(ctx context.Context) error {
	want := st.Plan()
	served := func(code int, why string) bool { return code == want || trafficRefusal(code, why) }
	if code, why, err := st.poll(ctx, st.Probe, true, served); !served(code, why) {
		return fmt.Errorf("a CONNECT with the self-test's credentials to %s got %d %s (%v), want %d", st.Probe, code, why, err, want)
	}
	if code, _, err := st.connect(ctx, st.Probe, false); code != http.StatusProxyAuthRequired {
		return fmt.Errorf("a CONNECT without credentials got %d (%v), want 407", code, err)
	}
	code, _, err := st.connect(ctx, st.Forbidden, true)
	if err != nil {
		return fmt.Errorf("the proxy did not answer a CONNECT to the metadata server: %w", err)
	}
	if code == http.StatusOK {
		return fmt.Errorf("the proxy reached the metadata server")
	}
	return nil
}

// trafficRefusal reports whether a CONNECT's answer is the refusal of a
// proxy that carries no new connection this month: its namespace's
// budget stops its traffic (budget-exceeded, vmconfig.Config.TrafficStop)
// or it carried its quota (quota-exceeded). The engine answers either
// only after it authenticated the self-test's user, which only the
// configuration under test carries, so it proves that configuration is
// served as well as Plan's answer does; and a configuration that carries
// a stop, or comes to a VM whose quota is spent, must not be rolled back
// for refusing what it is meant to refuse.
func trafficRefusal(code int, why string) bool {
	return code == http.StatusForbidden && (why == "budget-exceeded" || why == "quota-exceeded")
}

// Dropped proves the self-test's user is gone: its credentials get 407.
func (st SelfTest) Dropped(ctx context.Context) error {
	if code, _, err := st.poll(ctx, st.Probe, true, func(c int, _ string) bool { return c == http.StatusProxyAuthRequired }); code != http.StatusProxyAuthRequired {
		return fmt.Errorf("the engine still accepts the self-test's credentials after a reload (%d, %v)", code, err)
	}
	return nil
}
