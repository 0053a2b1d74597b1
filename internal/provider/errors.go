package provider

import (
	"errors"
	"fmt"
	"time"
)

// ErrNotFound is what Get returns (wrapped or not) for an instance that does
// not exist. It is a normal outcome, not a failure: the reconciler replaces a
// lost VM and the GC ignores one that is already gone. Test for it with
// errors.Is, never by comparing strings.
var ErrNotFound = errors.New("instance not found")

// Kind classifies a provider error by what the caller should do about it.
// Every provider maps its own error codes onto these kinds, so that the
// reconciler decides retry, backoff and failure the same way for all of them.
type Kind string

const (
	// KindNotFound: the instance does not exist. errors.Is(err, ErrNotFound)
	// holds for every error of this kind.
	KindNotFound Kind = "NotFound"
	// KindAlreadyExists: a resource with that name exists and belongs to
	// someone else (another uid), so it must not be adopted.
	KindAlreadyExists Kind = "AlreadyExists"
	// KindQuota: a quota is exhausted; retrying soon will not help much, so
	// callers back off to the cap.
	KindQuota Kind = "Quota"
	// KindRateLimited: too many requests; retry with backoff.
	KindRateLimited Kind = "RateLimited"
	// KindCapacity: the zone has no capacity for this machine type right now
	// (GCE's ZONE_RESOURCE_POOL_EXHAUSTED); retry with backoff.
	KindCapacity Kind = "Capacity"
	// KindTransient: a server-side or network fault; retry with backoff.
	KindTransient Kind = "Transient"
	// KindPermanent: the request can never succeed as it is (bad image, bad
	// machine type, permission denied); retrying is pointless.
	KindPermanent Kind = "Permanent"
)

// Error is a classified provider error. It names the operation and the
// instance it concerns so that a log line or a status message is actionable.
type Error struct {
	Kind Kind
	// Op is the provider method that failed: "create", "get", "delete",
	// "list". From Get, Op "create" says the create of the VM, which the
	// provider had accepted, failed since (a stockout, a quota, an image
	// that does not exist): the VM will never exist, and a new create is
	// the way on.
	Op string
	// Target is the providerID or instance name concerned, if any.
	Target string
	// Zone, for a KindCapacity error, is the zone that had no room, so the
	// caller can ask for another (CreateRequest.AvoidZones).
	Zone string
	// RetryAfter, for a KindRateLimited error, is how long the cloud said
	// to wait before the next call (Hetzner's RateLimit-* headers); zero
	// when it said nothing, and the caller's backoff decides.
	RetryAfter time.Duration
	// Err is the underlying error, as the provider's client returned it.
	Err error
}

// NewError classifies err as kind for operation op on target.
func NewError(kind Kind, op, target string, err error) *Error {
	return &Error{Kind: kind, Op: op, Target: target, Err: err}
}

func (e *Error) Error() string {
	msg := "<nil>"
	if e.Err != nil {
		msg = e.Err.Error()
	}
	if e.Target == "" {
		return fmt.Sprintf("%s: %s: %s", e.Op, e.Kind, msg)
	}
	return fmt.Sprintf("%s %s: %s: %s", e.Op, e.Target, e.Kind, msg)
}

func (e *Error) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrNotFound) hold for every KindNotFound error, so
// callers need one test whatever the provider wrapped.
func (e *Error) Is(target error) bool {
	return target == ErrNotFound && e.Kind == KindNotFound
}

// KindOf returns the kind of err: the Kind of the first *Error in its chain,
// KindNotFound for ErrNotFound, and KindTransient for anything unclassified
// (including context deadlines), since retrying with a capped backoff is the
// safe default for an error nobody has explained. It returns "" for nil.
func KindOf(err error) Kind {
	var pe *Error
	switch {
	case err == nil:
		return ""
	case errors.As(err, &pe):
		return pe.Kind
	case errors.Is(err, ErrNotFound):
		return KindNotFound
	default:
		// Unclassified, a context deadline or cancellation included: the
		// caller gave up or nobody explained, and a retry is the safe guess.
		return KindTransient
	}
}

// CreateFailed reports whether err says an accepted create failed since
// (Op "create" from Get).
func CreateFailed(err error) bool {
	var pe *Error
	return errors.As(err, &pe) && pe.Op == "create"
}

// FullZone is the zone a capacity error says had no room, or "".
func FullZone(err error) string {
	var pe *Error
	if errors.As(err, &pe) && pe.Kind == KindCapacity {
		return pe.Zone
	}
	return ""
}

// RetryAfter is how long a rate-limited call's cloud said to wait, or 0.
func RetryAfter(err error) time.Duration {
	var pe *Error
	if errors.As(err, &pe) && pe.Kind == KindRateLimited {
		return pe.RetryAfter
	}
	return 0
}

// Retryable reports whether an operation that failed with err may succeed if
// tried again later. Permanent failures and name conflicts are not retryable.
func Retryable(err error) bool {
	switch KindOf(err) {
	case KindPermanent, KindAlreadyExists, "":
		return false
	default:
		return true
	}
}
