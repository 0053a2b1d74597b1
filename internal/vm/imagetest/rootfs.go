package imagetest

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// Release is a Debian release the test boots: the image family of the
// gcp provider's default image (debian-13) and the one before it.
type Release struct {
	// Family is Google's image family, the name the summary line gives.
	Family string
	// Suite is Debian's code name, what debootstrap builds.
	Suite string
	// Cloud is whose image the root file system is shaped like: "" for
	// Google's (the guest agent runs the startup script), a cloud-init
	// cloud's name otherwise ("hetzner", "ec2": cloud-init runs the
	// user-data, CloudInitPackages), which names its tree, its copy and
	// its container.
	Cloud string
	// Image is what makes the tree that cloud's image (its datasource,
	// the firmware it checks); nil for Google's.
	Image *CloudImage
}

// Releases are booted in this order.
var Releases = []Release{{Family: "debian-13", Suite: "trixie"}, {Family: "debian-12", Suite: "bookworm"}}

// Packages are what the root file system holds beyond Debian's minimal
// base, which is what Google's Debian images hold where the startup script
// depends on it: an init that boots (systemd, dbus), curl and
// ca-certificates (both in Google's images), iproute2 and nftables (Debian
// priority "important", so in every standard Debian image, Google's
// included), and Google's guest environment as Debian packages it, which
// runs the startup script on Compute Engine. Nothing of the project: the
// script installs the proxy engine itself, as on a fresh VM.
var Packages = []string{
	"systemd", "systemd-sysv", "dbus",
	"curl", "ca-certificates", "iproute2", "nftables",
	"google-guest-agent",
}

// packages is what rel's root file system holds beyond the minimal base.
func (rel Release) packages() []string {
	if rel.Image != nil {
		return CloudInitPackages
	}
	return Packages
}

// setupVersion names what prepare does to the debootstrapped tree; change
// it when prepare changes, so that the cache key changes with it.
const setupVersion = "2: /etc/hosts with metadata.google.internal; resolv.conf to 169.254.169.254; hostname"

// sourcesFile is where the host's APT sources name its Debian mirror.
const sourcesFile = "/etc/apt/sources.list.d/debian.sources"

// CacheDir is where root file systems are kept between runs:
// ${XDG_CACHE_HOME:-$HOME/.cache}/egress/imagetest, outside the repository.
func CacheDir() (string, error) {
	base := os.Getenv("XDG_CACHE_HOME")
	if base == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("finding a cache folder: %w", err)
		}
		base = filepath.Join(home, ".cache")
	}
	return filepath.Join(base, "egress", "imagetest"), nil
}

// Mirror is the first URIs: of the host's Debian sources: whatever mirror
// the machine is set up to use, read at run time so that no host name is
// written into the repository.
func Mirror() (string, error) {
	f, err := os.Open(sourcesFile)
	if err != nil {
		return "", fmt.Errorf("reading the Debian mirror: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "URIs:"); ok {
			if fields := strings.Fields(v); len(fields) > 0 {
				return fields[0], nil
			}
		}
	}
	if err := sc.Err(); err != nil {
		return "", fmt.Errorf("reading %s: %w", sourcesFile, err)
	}
	return "", fmt.Errorf("no URIs: line in %s", sourcesFile)
}

// CacheKey is a short hash of everything a release's root file system is
// made of.
func CacheKey(rel Release) string {
	setup := setupVersion
	if rel.Image != nil {
		setup = rel.Cloud + " " + rel.Image.Setup
	}
	sum := sha256.Sum256([]byte(rel.Suite + "\n" + strings.Join(rel.packages(), ",") + "\n" + setup))
	return hex.EncodeToString(sum[:6])
}

// Rootfs returns the cached root file system, building it first if the
// cache has none for the current CacheKey. built says whether it did. A
// lock file keeps two runs from building the same tree at once; a build
// that dies leaves only a temporary folder, which the next build removes.
func Rootfs(ctx context.Context, rel Release, log io.Writer) (dir string, built bool, err error) {
	cache, err := CacheDir()
	if err != nil {
		return "", false, err
	}
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return "", false, fmt.Errorf("making the cache folder: %w", err)
	}
	dir = filepath.Join(cache, "rootfs-"+rel.Family+"-"+CacheKey(rel))
	if rel.Cloud == "" {
		// The name GCE's trees have always had in the cache.
		dir = filepath.Join(cache, "rootfs-"+rel.Suite+"-"+CacheKey(rel))
	}
	lock, err := os.OpenFile(dir+".lock", os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return "", false, fmt.Errorf("opening the cache lock: %w", err)
	}
	defer lock.Close()
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX); err != nil {
		return "", false, fmt.Errorf("locking %s: %w", lock.Name(), err)
	}
	if _, err := os.Stat(filepath.Join(dir, "etc", "os-release")); err == nil {
		return dir, false, nil
	}
	mirror, err := Mirror()
	if err != nil {
		return "", false, err
	}
	tmp := dir + ".building"
	if err := os.RemoveAll(tmp); err != nil {
		return "", false, fmt.Errorf("removing a half-built root file system: %w", err)
	}
	args := []string{"--variant=minbase", "--include=" + strings.Join(rel.packages(), ","), rel.Suite, tmp, mirror}
	fmt.Fprintf(log, "imagetest: building a Debian %s root file system in %s (debootstrap, one to two minutes)\n", rel.Suite, dir)
	cmd := exec.CommandContext(ctx, "debootstrap", args...)
	tail := &tailWriter{max: 4 << 10}
	cmd.Stdout, cmd.Stderr = tail, tail
	if err := cmd.Run(); err != nil {
		return "", false, fmt.Errorf("debootstrap %s: %w\n%s", strings.Join(args, " "), err, tail)
	}
	prep := prepare
	if rel.Image != nil {
		prep = rel.Image.Prepare
	}
	if err := prep(tmp); err != nil {
		return "", false, err
	}
	if err := os.Rename(tmp, dir); err != nil {
		return "", false, fmt.Errorf("moving the built root file system into the cache: %w", err)
	}
	return dir, true, nil
}

// prepare makes the tree look like a Compute Engine image where the
// difference matters to the guest environment: the metadata server's
// name resolves, and the resolver is the metadata server's address, as
// on Compute Engine (debootstrap copies the host's resolver, which the
// container cannot reach).
func prepare(root string) error {
	return WriteFiles(root, map[string]string{
		"etc/hosts":       "127.0.0.1 localhost\n::1 localhost ip6-localhost ip6-loopback\n169.254.169.254 metadata.google.internal metadata\n",
		"etc/hostname":    "egress-proxy\n",
		"etc/resolv.conf": "nameserver 169.254.169.254\n",
	})
}

// WriteFiles writes files into the tree at root, replacing what is there.
func WriteFiles(root string, files map[string]string) error {
	for name, content := range files {
		// Removed first: were it a symlink, writing through it would
		// follow it out of the tree onto the host.
		path := filepath.Join(root, name)
		if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
			return fmt.Errorf("preparing the root file system: %w", err)
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return fmt.Errorf("preparing the root file system: %w", err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			return fmt.Errorf("preparing the root file system: %w", err)
		}
	}
	return nil
}

// Copy makes a throwaway copy of a root file system at dst (cp -a keeps
// owners, modes and links; reflinks where the file system has them).
func Copy(ctx context.Context, src, dst string) error {
	out, err := exec.CommandContext(ctx, "cp", "-a", "--reflink=auto", src, dst).CombinedOutput()
	if err != nil {
		return fmt.Errorf("cp -a %s %s: %w: %s", src, dst, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// tailWriter keeps the last max bytes written to it: the part of a long
// tool's output that explains its failure.
type tailWriter struct {
	buf []byte
	max int
}

func (t *tailWriter) Write(b []byte) (int, error) {
	t.buf = append(t.buf, b...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = t.buf[over:]
	}
	return len(b), nil
}

func (t *tailWriter) String() string { return string(t.buf) }
