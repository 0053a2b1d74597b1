package proxy

import (
	"errors"
	"fmt"
	"time"
)

// Errors about documents, shared by the store (which maps Firestore codes to
// them), the API (which maps them to HTTP codes) and the reconciler.
var (
	// ErrNotFound: the document does not exist.
	ErrNotFound = errors.New("proxy not found")
	// ErrAlreadyExists: a document with that name exists.
	ErrAlreadyExists = errors.New("proxy already exists")
	// ErrConflict: the document changed since it was read (an update-time
	// precondition failed); read it again and decide again.
	ErrConflict = errors.New("proxy changed since it was read")
	// ErrQuotaExceeded: the namespace has as many proxies as its quota allows.
	ErrQuotaExceeded = errors.New("namespace quota exceeded")
	// ErrInvalidPageToken: a list's page token was not made by a list.
	ErrInvalidPageToken = errors.New("invalid page token")
	// ErrBeingDeleted: the proxy's deletion was requested, so it takes no
	// other change (a rotation) on its way out.
	ErrBeingDeleted = errors.New("proxy is being deleted")
	// ErrNotReady: the proxy is not Ready, so it is not rotated: a VM
	// still booting (or being replaced) is not replaced again.
	ErrNotReady = errors.New("proxy is not Ready")
	// ErrFailed: the proxy is Failed (a permanent provider error), so it
	// takes no change of its configuration: there is no VM to give it to,
	// and none will be made.
	ErrFailed = errors.New("proxy is Failed")
	// ErrRotatedRecently: the proxy was rotated within the least interval
	// between two rotations.
	ErrRotatedRecently = errors.New("proxy was rotated too recently")
	// ErrCreatesPerHour: the namespace's requests asked for as many VMs
	// within the last hour as it may.
	ErrCreatesPerHour = errors.New("namespace asked for its VMs of the hour")
	// ErrPoolClaimsPerHour: the namespace claimed as many VMs from the pool
	// within the last hour as the pool lets one namespace
	// (PoolSpec.ClaimsPerNamespacePerHour); its proxy boots a VM of its own.
	ErrPoolClaimsPerHour = errors.New("namespace claimed its VMs of the hour from the pool")
	// ErrNoWarmVM: the pool has no member whose VM may be claimed now
	// (Ready, unclaimed, not being deleted); the proxy is created cold.
	ErrNoWarmVM = errors.New("pool has no warm VM")
)

// RetryError is a request refused until At, when the same request may be
// taken: it wraps the rule's error (ErrRotatedRecently, ErrCreatesPerHour).
type RetryError struct {
	At  time.Time
	Err error
}

func (e *RetryError) Error() string {
	return fmt.Sprintf("%v: retry at %s", e.Err, e.At.UTC().Format(time.RFC3339))
}

func (e *RetryError) Unwrap() error { return e.Err }
