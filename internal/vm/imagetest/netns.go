package imagetest

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"strings"

	"golang.org/x/sys/unix"
)

// Netns is a network namespace made with `ip netns add`, so that it has a
// name under /run/netns that systemd-nspawn can join.
type Netns struct {
	Name string
}

// Path is the namespace's file, the value of nspawn's
// --network-namespace-path.
func (n *Netns) Path() string { return "/run/netns/" + n.Name }

// ipCmd runs ip(8); its error names the command and carries its output,
// since ip's messages ("File exists", "Invalid argument") mean nothing
// without the line that caused them.
func ipCmd(args ...string) error {
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// NewNetns makes a namespace with its loopback up.
func NewNetns(name string) (*Netns, error) {
	if err := ipCmd("netns", "add", name); err != nil {
		return nil, err
	}
	n := &Netns{Name: name}
	if err := n.IP("link", "set", "lo", "up"); err != nil {
		_ = n.Delete()
		return nil, err
	}
	return n, nil
}

// Delete removes the namespace; the veth ends inside it go with it.
func (n *Netns) Delete() error { return ipCmd("netns", "delete", n.Name) }

// IP runs ip(8) inside the namespace.
func (n *Netns) IP(args ...string) error { return ipCmd(append([]string{"-n", n.Name}, args...)...) }

// AddAddr puts an address on a link of the namespace. IPv6 addresses get
// nodad, or they would stay tentative (unusable) for a second or two.
func (n *Netns) AddAddr(dev string, p netip.Prefix) error {
	args := []string{"addr", "add", p.String(), "dev", dev}
	if p.Addr().Is6() {
		args = append(args, "nodad")
	}
	return n.IP(args...)
}

// Link joins two namespaces with a veth pair, one end in each, both up.
func Link(a *Netns, aDev string, b *Netns, bDev string) error {
	if err := ipCmd("link", "add", aDev, "netns", a.Name, "type", "veth", "peer", "name", bDev, "netns", b.Name); err != nil {
		return err
	}
	if err := a.IP("link", "set", aDev, "up"); err != nil {
		return err
	}
	return b.IP("link", "set", bDev, "up")
}

// Do runs fn on an OS thread that has joined the namespace. A socket keeps
// the namespace it was made in, so a listener opened or a connection dialled
// inside fn lives in the namespace while the rest of the test process does
// not. The thread joins its own namespace again afterwards; if it cannot,
// it stays locked, and the Go runtime ends it rather than reuse it.
func (n *Netns) Do(fn func() error) error {
	target, err := os.Open(n.Path())
	if err != nil {
		return fmt.Errorf("network namespace %s: %w", n.Name, err)
	}
	defer target.Close()

	runtime.LockOSThread()
	home, err := os.Open(fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid()))
	if err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("the thread's own network namespace: %w", err)
	}
	defer home.Close()
	if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("joining network namespace %s: %w", n.Name, err)
	}
	ferr := fn()
	if err := unix.Setns(int(home.Fd()), unix.CLONE_NEWNET); err != nil {
		// Locked for good: the goroutine's end takes the thread with it.
		return fmt.Errorf("leaving network namespace %s: %w", n.Name, err)
	}
	runtime.UnlockOSThread()
	return ferr
}

// Listen opens a TCP listener inside the namespace.
func (n *Netns) Listen(addr string) (net.Listener, error) {
	var l net.Listener
	err := n.Do(func() error {
		var err error
		l, err = net.Listen("tcp", addr)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("listening on %s in network namespace %s: %w", addr, n.Name, err)
	}
	return l, nil
}

// ListenPacket opens a UDP socket inside the namespace.
func (n *Netns) ListenPacket(addr string) (net.PacketConn, error) {
	var c net.PacketConn
	err := n.Do(func() error {
		var err error
		c, err = net.ListenPacket("udp", addr)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("listening on udp %s in network namespace %s: %w", addr, n.Name, err)
	}
	return c, nil
}

// Dialer returns a dial function whose connections start in the namespace
// from the local address from. The socket is made and its connect begun on
// the namespace's thread; Go's poller finishes the connect on any thread,
// which is fine since the socket's namespace is fixed at its creation.
func (n *Netns) Dialer(from netip.Addr) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: from.AsSlice()}}
		var c net.Conn
		err := n.Do(func() error {
			var err error
			c, err = d.DialContext(ctx, network, addr)
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("dialling %s from %s in network namespace %s: %w", addr, from, n.Name, err)
		}
		return c, nil
	}
}

// DeleteNetnsWithPrefix deletes the namespaces a run that died left behind,
// recognised by the prefix of their names.
func DeleteNetnsWithPrefix(prefix string) error {
	out, err := exec.Command("ip", "netns", "list").CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip netns list: %w: %s", err, strings.TrimSpace(string(out)))
	}
	var errs []string
	for _, line := range strings.Split(string(out), "\n") {
		// Lines read "NAME" or "NAME (id: N)".
		name, _, _ := strings.Cut(strings.TrimSpace(line), " ")
		if strings.HasPrefix(name, prefix) {
			if err := ipCmd("netns", "delete", name); err != nil {
				errs = append(errs, err.Error())
			}
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("deleting leftover namespaces: %s", strings.Join(errs, "; "))
	}
	return nil
}
