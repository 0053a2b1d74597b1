// Package proxyengine is the forward proxy that runs on each proxy VM: HTTP
// CONNECT and plain HTTP, Basic credentials checked against salted hashes,
// CONNECT only to the allowed ports, the client's source and the tunnel's
// destination checked against ranges, and counters of the traffic it
// carries. The binary is internal/cmd/egress-proxy; the startup script
// (internal/bootstrap) delivers it and writes its configuration, and the
// mock provider runs it on loopback for the local stack.
//
// This file is the contract between the engine, the startup script that
// configures it and the control plane that reads its counters: the JSON
// configuration, the password hash and the counters.
package proxyengine

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"strings"
	"time"
)

// Config is the engine's whole configuration, read from one JSON file (on a
// VM, written by the startup script or the configuration agent from
// instance metadata). Applying a new Config keeps established tunnels.
type Config struct {
	// Generation is the configuration's generation, reported in Stats so
	// the control plane can tell which configuration a VM serves.
	Generation int64 `json:"generation"`
	// Listen is the address the proxy serves on, such as ":3128".
	Listen string `json:"listen"`
	// Users are the accepted credentials. More than one lets a rotation
	// overlap; a request must match one of them.
	Users []User `json:"users"`
	// AllowedSourceRanges are the CIDRs a client may connect from; a
	// connection from elsewhere is closed before a byte is read. The host
	// firewall enforces the same ranges: this is the second wall.
	AllowedSourceRanges []string `json:"allowedSourceRanges"`
	// ConnectPorts are the destination ports CONNECT (and plain HTTP) may
	// reach.
	ConnectPorts []int `json:"connectPorts"`
	// DenyDestinations are the CIDRs no request may reach (the metadata
	// server, private and special ranges), checked on the address a name
	// resolves to, before dialling. The VM's nftables filter enforces them
	// again in the kernel.
	DenyDestinations []string `json:"denyDestinations"`
	// AllowDestinations are exceptions to DenyDestinations, for the local
	// stack's own test targets on loopback; empty on a VM.
	AllowDestinations []string `json:"allowDestinations,omitempty"`
	// StatsListen, when set, is a loopback address serving GET /stats with
	// the Stats as JSON.
	StatsListen string `json:"statsListen,omitempty"`
}

// User is one accepted credential: a username and the salted hash of its
// password. The password itself is never written to the VM's metadata or
// disk.
type User struct {
	Name string `json:"name"`
	// PasswordHash is HashPassword's output.
	PasswordHash string `json:"passwordHash"`
}

// hashScheme prefixes every PasswordHash, so another scheme can follow
// without ambiguity.
const hashScheme = "sha256"

// saltLength is the bytes of salt NewPasswordHash draws.
const saltLength = 16

// HashPassword returns "sha256:SALT:DIGEST", the salt and SHA-256(salt ||
// password) each in unpadded base64url. A fast hash suffices because every
// password is 128 or more random bits (internal/proxy.NewCredentials): no
// guess of one can be tried against its hash in any useful time, and a
// slow hash would cost each new connection its latency.
func HashPassword(password string, salt []byte) string {
	sum := sha256.Sum256(append(append([]byte{}, salt...), password...))
	enc := base64.RawURLEncoding
	return hashScheme + ":" + enc.EncodeToString(salt) + ":" + enc.EncodeToString(sum[:])
}

// NewPasswordHash hashes password with a fresh random salt.
func NewPasswordHash(password string) (string, error) {
	salt := make([]byte, saltLength)
	if _, err := rand.Read(salt); err != nil {
		return "", fmt.Errorf("proxyengine: drawing a salt: %w", err)
	}
	return HashPassword(password, salt), nil
}

// Matches reports, in time independent of where they differ, whether
// password is the one hash was made from. A hash it cannot read matches
// nothing.
func Matches(hash, password string) bool {
	scheme, rest, ok := strings.Cut(hash, ":")
	if !ok || scheme != hashScheme {
		return false
	}
	saltText, _, ok := strings.Cut(rest, ":")
	if !ok {
		return false
	}
	salt, err := base64.RawURLEncoding.DecodeString(saltText)
	if err != nil {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(HashPassword(password, salt)), []byte(hash)) == 1
}

// Stats are the engine's counters since it started, served at StatsListen
// and reported by the VM to the control plane.
type Stats struct {
	// Generation is the Config.Generation being served.
	Generation int64 `json:"generation"`
	// Since is when the engine started counting.
	Since time.Time `json:"since"`
	// BytesIn are the bytes received from clients; BytesOut those sent to
	// them.
	BytesIn  int64 `json:"bytesIn"`
	BytesOut int64 `json:"bytesOut"`
	// Connections are the client connections accepted; ActiveTunnels the
	// CONNECT tunnels open now.
	Connections   int64 `json:"connections"`
	ActiveTunnels int64 `json:"activeTunnels"`
}
