// Package callhome handles what the proxy VMs send on proxy-callhome: a
// hint that a VM is ready (or failed its boot), and the proxy engine's
// access lines. A VM is not trusted with anything it says about itself:
//
//   - who sent a message is its identity token (package vmidentity), signed
//     by Google for the instance; a message without a valid one is dropped
//     before anything is read;
//   - each VM, by the name its token proves, has a token bucket
//     (Limiter: Burst messages, one more every Interval), spent first from
//     a bucket of the same size in the instance's memory (local.go), so a
//     flood from one VM costs an invocation per message and a document
//     read only per message the instance's bucket lets through, and
//     nothing else: no reconcile, no write, no log entry;
//   - access lines are written to the log egress-proxy-access (Sink) with
//     the labels of the proxy whose VM the token names (its uid, namespace
//     and name, read from its document), never with what the VM claims,
//     and each line is rebuilt from the fields of vmconfig's AccessLine
//     contract: a VM cannot add a field, a message or a severity of its
//     own.
//
// A hint only says where to look (the reconciler reads the document and
// the VM itself), as it did before tokens; it is rate-limited like the
// rest.
package callhome

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/egress-proxies/egress/internal/clock"
	"github.com/egress-proxies/egress/internal/proxy"
	"github.com/egress-proxies/egress/internal/queue"
	"github.com/egress-proxies/egress/internal/vm/vmconfig"
	"github.com/egress-proxies/egress/internal/vmidentity"
)

// The bucket every VM has: what a VM needs is a ready hint per boot or
// change and an access batch a minute (AccessInterval on the VM), with room
// for a burst of changes.
const (
	Burst    = 10
	Interval = 20 * time.Second
)

// Verifier tells which VM a token is of (vmidentity.Verifier).
type Verifier interface {
	Verify(ctx context.Context, token string) (vmidentity.Instance, error)
}

// Limiter takes one token from the bucket of VM vm, refilled at one per
// interval up to burst; false when it is empty. It costs one document
// read, and a write only when it takes a token.
type Limiter interface {
	TakeCallHome(ctx context.Context, vm string, now time.Time, burst int, interval time.Duration) (bool, error)
}

// Docs reads a proxy document (the store).
type Docs interface {
	Get(ctx context.Context, key proxy.Key) (*proxy.Proxy, error)
}

// Labels are what an access line is filed under: the proxy whose VM its
// token names.
type Labels struct {
	UID, Namespace, Name string
	// Instance is the VM, as its token names it. A VM read by pull
	// (Provider set) has no token: its Name and ID are its providerID and
	// its Zone its provider's, as its provider lists it.
	Instance vmidentity.Instance
	// Provider is the provider type of a VM read by pull (through the
	// status door); empty for a VM that called home.
	Provider string
}

// Sink writes a proxy's access lines to the log egress-proxy-access.
type Sink interface {
	Write(ctx context.Context, l Labels, lines []vmconfig.AccessLine) error
}

// Handler handles call-home messages.
type Handler struct {
	Verifier Verifier
	Limiter  Limiter
	Docs     Docs
	Sink     Sink
	Clock    clock.Clock
	Log      *slog.Logger

	// local are this instance's buckets, spent before the store's
	// (local.go).
	local localBuckets
}

// ErrRefused wraps why a message was dropped: a redelivery would be
// dropped the same way, so the caller acknowledges it.
var ErrRefused = errors.New("call-home refused")

// Handle handles one message on proxy-callhome. For a hint it returns the
// document to reconcile and the message; for access lines, which it writes
// itself, a zero key. An error wrapping ErrRefused is a message dropped for
// good; any other is one to be delivered again (the store or the log could
// not be reached).
func (h *Handler) Handle(ctx context.Context, m queue.Message) (proxy.Key, proxy.ReconcileMessage, error) {
	inst, err := h.Verifier.Verify(ctx, m.Attributes[queue.IdentityAttribute])
	if err != nil {
		return proxy.Key{}, proxy.ReconcileMessage{}, fmt.Errorf("%w: message %s: %w", ErrRefused, m.MessageID, err)
	}
	now := h.Clock.Now()
	if !h.local.allow(inst.Name, now) {
		return proxy.Key{}, proxy.ReconcileMessage{}, fmt.Errorf("%w: message %s: VM %s sent more than %d messages to this instance, one more each %s", ErrRefused, m.MessageID, inst.Name, Burst, Interval)
	}
	ok, err := h.Limiter.TakeCallHome(ctx, inst.Name, now, Burst, Interval)
	if err != nil {
		return proxy.Key{}, proxy.ReconcileMessage{}, fmt.Errorf("call-home bucket of VM %s: %w", inst.Name, err)
	}
	if !ok {
		return proxy.Key{}, proxy.ReconcileMessage{}, fmt.Errorf("%w: message %s: VM %s sent more than %d messages, one more each %s", ErrRefused, m.MessageID, inst.Name, Burst, Interval)
	}
	if m.Attributes[queue.KindAttribute] == queue.KindAccess {
		return proxy.Key{}, proxy.ReconcileMessage{}, h.access(ctx, m, inst)
	}
	key, rm, err := queue.DecodeCallHome(m)
	if err != nil {
		return proxy.Key{}, rm, fmt.Errorf("%w: %w", ErrRefused, err)
	}
	return key, rm, nil
}

// access writes a batch of access lines under the labels of the proxy the
// VM serves: the document the batch names must have the batch's uid and
// the token's VM as its VM.
func (h *Handler) access(ctx context.Context, m queue.Message, inst vmidentity.Instance) error {
	var b vmconfig.AccessBatch
	if err := json.Unmarshal(m.Data, &b); err != nil {
		return fmt.Errorf("%w: message %s: body is not an access batch: %w", ErrRefused, m.MessageID, err)
	}
	key := proxy.Key{Namespace: b.Namespace, Name: b.Name}
	if !proxy.IsLabel(key.Namespace) || !proxy.IsLabel(key.Name) {
		return fmt.Errorf("%w: message %s: access lines name namespace %q and name %q, which are no RFC 1123 labels", ErrRefused, m.MessageID, b.Namespace, b.Name)
	}
	p, err := h.Docs.Get(ctx, key)
	switch {
	case errors.Is(err, proxy.ErrNotFound):
		return fmt.Errorf("%w: message %s: VM %s sent access lines of %s, which does not exist", ErrRefused, m.MessageID, inst.Name, key)
	case err != nil:
		return err
	case p.UID != b.UID || !isVMOf(p, inst.Name):
		return fmt.Errorf("%w: message %s: VM %s sent access lines of %s (uid %s), whose VM it is not", ErrRefused, m.MessageID, inst.Name, key, p.UID)
	}
	lines := make([]vmconfig.AccessLine, 0, len(b.Lines))
	bad := 0
	for _, raw := range b.Lines {
		l, err := parseLine(raw)
		if err != nil {
			bad++
			continue
		}
		lines = append(lines, l)
	}
	if bad > 0 {
		h.Log.WarnContext(ctx, "access lines dropped: not of the AccessLine contract", slog.String("document", key.Path()), slog.String("instance", inst.Name), slog.Int("dropped", bad))
	}
	if b.Dropped > 0 {
		h.Log.InfoContext(ctx, "the engine dropped access lines nobody read in time", slog.String("document", key.Path()), slog.String("instance", inst.Name), slog.Int64("dropped", b.Dropped))
	}
	if len(lines) == 0 {
		return nil
	}
	return h.Sink.Write(ctx, Labels{UID: p.UID, Namespace: p.Namespace, Name: p.Name, Instance: inst}, lines)
}

// isVMOf reports whether the VM named vm serves p: its providerID
// (gce://PROJECT/ZONE/NAME, mock://NAME) names it, or the VM it is
// retiring after a make-before-break rotation does.
func isVMOf(p *proxy.Proxy, vm string) bool {
	for _, id := range []string{p.Status.ProviderID, p.Reconciler.Retiring} {
		if id != "" && (strings.HasSuffix(id, "/"+vm) || strings.TrimPrefix(id, "mock://") == vm) {
			return true
		}
	}
	return false
}
