package engine

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"syscall"
)

// reply is one way the engine refuses a request: the HTTP status, a
// short and stable code (the X-Egress-Error header, the access line's
// reason), a sentence for the one-line body, and the SOCKS5 reply code
// (RFC 1928 §6) of the same refusal. The codes are documented in the
// table of answers of docs/concepts/vm.md; a client or an operator may
// match on them, so they never change meaning.
type reply struct {
	Status int
	Code   string
	Text   string
	Socks  byte
}

// SOCKS5 reply codes (RFC 1928 §6).
const (
	socksSucceeded            = 0x00
	socksGeneralFailure       = 0x01
	socksNotAllowed           = 0x02
	socksNetworkUnreachable   = 0x03
	socksHostUnreachable      = 0x04
	socksConnectionRefused    = 0x05
	socksCommandNotSupported  = 0x07
	socksAddressNotSupported  = 0x08
	socksNoAcceptableMethods  = 0xff
	socksVersion              = 0x05
	socksAuthVersion          = 0x01
	socksMethodUserPass       = 0x02
	socksAuthSucceeded        = 0x00
	socksAuthFailed           = 0x01
	socksCommandConnect       = 0x01
	socksCommandBind          = 0x02
	socksCommandUDPAssociate  = 0x03
	socksAddressIPv4          = 0x01
	socksAddressDomain        = 0x03
	socksAddressIPv6          = 0x04
	socksMaxDomainLengthBytes = 255
)

// The answers. Each refusal the engine makes is one of these.
var (
	ansCredentialsMissing  = reply{407, "credentials-missing", "this proxy needs Basic credentials", socksNotAllowed}
	ansCredentialsWrong    = reply{407, "credentials-wrong", "the credentials are not this proxy's", socksNotAllowed}
	ansSourceNotAllowed    = reply{403, "source-not-allowed", "the client's address is not in allowedSourceRanges", socksNotAllowed}
	ansPortNotAllowed      = reply{403, "port-not-allowed", "the destination port is not one this proxy allows", socksNotAllowed}
	ansDestinationDenied   = reply{403, "destination-denied", "the destination is in a range this proxy never reaches", socksNotAllowed}
	ansZoneNotAllowed      = reply{403, "zone-not-allowed", "an address with a zone ID is never a destination", socksNotAllowed}
	ansMethodNotAllowed    = reply{405, "method-not-allowed", "TRACE is not carried", socksCommandNotSupported}
	ansBadRequest          = reply{400, "bad-request", "the request is not HTTP/1.1 this proxy can read", socksGeneralFailure}
	ansBadTarget           = reply{400, "bad-target", "the destination is not host:port", socksAddressNotSupported}
	ansNotAProxyRequest    = reply{400, "not-a-proxy-request", "send CONNECT host:port or an absolute http:// URL", socksGeneralFailure}
	ansBadFraming          = reply{400, "bad-framing", "the request's length is ambiguous (RFC 9112 §6.3)", socksGeneralFailure}
	ansBadBody             = reply{400, "bad-body", "the request body is malformed", socksGeneralFailure}
	ansBodyTimeout         = reply{408, "body-timeout", "no byte of the body came for bodyIdleTimeout", socksGeneralFailure}
	ansHeaderTooLarge      = reply{431, "header-too-large", "the request head is over 64 KiB", socksGeneralFailure}
	ansUpgradeUnsupported  = reply{501, "upgrade-not-supported", "send CONNECT for a WebSocket or another upgraded protocol", socksCommandNotSupported}
	ansCodingUnsupported   = reply{501, "transfer-coding-not-supported", "the only transfer coding carried is chunked", socksGeneralFailure}
	ansVersionNotSupported = reply{505, "version-not-supported", "only HTTP/1.0 and HTTP/1.1 are served (no HTTP/2 prior knowledge)", socksGeneralFailure}
	ansSocksVersion        = reply{400, "socks-version-not-supported", "only SOCKS5 is served; SOCKS4 and 4a get their reply 5B", socksGeneralFailure}
	ansCommandUnsupported  = reply{501, "command-not-supported", "only CONNECT is carried, and UDP ASSOCIATE where socks5UDP is on", socksCommandNotSupported}
	ansAddressUnsupported  = reply{501, "address-type-not-supported", "the address type is not IPv4, IPv6 or a name", socksAddressNotSupported}
	ansNameNotResolved     = reply{502, "name-not-resolved", "the destination's name did not resolve", socksHostUnreachable}
	ansConnectRefused      = reply{502, "connect-refused", "the destination refused the connection", socksConnectionRefused}
	ansConnectFailed       = reply{502, "connect-failed", "the destination could not be reached", socksNetworkUnreachable}
	ansConnectTimeout      = reply{504, "connect-timeout", "the destination did not answer within dialTimeout", socksHostUnreachable}
	ansUpstreamFailed      = reply{502, "upstream-failed", "the destination's answer was not HTTP this proxy can read", socksGeneralFailure}
	ansUpstreamTimeout     = reply{504, "upstream-timeout", "the destination did not answer within responseHeaderTimeout", socksGeneralFailure}
	ansQuotaExceeded       = reply{403, "quota-exceeded", "the proxy carried its trafficQuota this month: new connections are carried again at 00:00 UTC on the first, or once the quota is raised", socksNotAllowed}
	ansBudgetExceeded      = reply{403, "budget-exceeded", "the proxy's namespace spent its monthly budget and stops traffic at it: new connections are carried again at 00:00 UTC on the first, or once the budget is raised", socksNotAllowed}
	ansTooManyConnections  = reply{503, "too-many-connections", "the proxy holds maxConnections connections", socksGeneralFailure}
	ansStatusNotFound      = reply{404, "status-not-found", "egress-status.invalid serves GET /status and /access, and PUT /traffic", socksGeneralFailure}
	ansOrderRefused        = reply{403, "traffic-order-refused", "a traffic order is signed with the VM's sign key, issued within 5 minutes of its clock and after the last one taken", socksGeneralFailure}
	ansStatusNonce         = reply{400, "status-nonce-missing", "a status request carries a fresh nonce in X-Egress-Status-Nonce, which its answer is signed over", socksGeneralFailure}
)

// Why a tunnel or a connection ended before either side closed it: the
// access line's reason, never an answer a client reads.
const (
	endRevoked      = "credentials-revoked"
	endSourceGone   = "source-removed"
	endIdle         = "idle-timeout"
	endShutdown     = "shutdown"
	endClientGone   = "client-closed"
	endUpstreamGone = "upstream-failed"
)

// answers lists every answer, for the docs' table and its test.
func answers() []reply {
	return []reply{ansCredentialsMissing, ansCredentialsWrong, ansSourceNotAllowed, ansPortNotAllowed, ansDestinationDenied,
		ansZoneNotAllowed, ansMethodNotAllowed, ansBadRequest, ansBadTarget, ansNotAProxyRequest, ansBadFraming, ansBadBody,
		ansBodyTimeout, ansHeaderTooLarge, ansUpgradeUnsupported, ansCodingUnsupported, ansVersionNotSupported, ansSocksVersion, ansCommandUnsupported, ansAddressUnsupported,
		ansNameNotResolved, ansConnectRefused, ansConnectFailed, ansConnectTimeout, ansUpstreamFailed, ansUpstreamTimeout,
		ansTooManyConnections, ansQuotaExceeded, ansBudgetExceeded, ansStatusNotFound, ansStatusNonce, ansOrderRefused}
}

// body is the one-line body of an HTTP refusal.
func (a reply) body() string { return "egress-proxy: " + a.Code + ": " + a.Text + "\n" }

// refusal is an error that carries its answer, so that whichever layer
// finds the fault (the rules, the dial, the body reader) decides what the
// client is told.
type refusal struct {
	answer reply
	err    error
}

func (r *refusal) Error() string {
	if r.err == nil {
		return r.answer.Code
	}
	return r.answer.Code + ": " + r.err.Error()
}

func (r *refusal) Unwrap() error { return r.err }

// refuse wraps err (nil for none) with the answer a.
func refuse(a reply, err error) error { return &refusal{answer: a, err: err} }

func refusef(a reply, format string, args ...any) error {
	return &refusal{answer: a, err: fmt.Errorf(format, args...)}
}

// answerOf is the answer an error calls for: its own if it carries one,
// else what a failed dial or exchange with the destination means.
func answerOf(err error) reply {
	var r *refusal
	if errors.As(err, &r) {
		return r.answer
	}
	var dns *net.DNSError
	var ne net.Error
	switch {
	case errors.As(err, &dns):
		if dns.IsTimeout {
			return ansConnectTimeout
		}
		return ansNameNotResolved
	case errors.Is(err, syscall.ECONNREFUSED):
		return ansConnectRefused
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, os.ErrDeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return ansConnectTimeout
	}
	return ansConnectFailed
}
