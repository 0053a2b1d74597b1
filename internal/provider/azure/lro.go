package azure

import (
	"context"
	"log/slog"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"

	"github.com/egress-proxies/egress/internal/provider"
)

// ARM's PUTs and DELETEs are long-running operations: the first answer
// (201 or 202, with an Azure-AsyncOperation or Location header) says the
// operation is accepted, and its status URL says when it ends. The SDK's
// poller follows them, and its ResumeToken is that status URL and the
// operation's kind, from which a poller of another call (or another
// process) takes over without sending the request again.
//
// Which operations are followed: the PUTs of the IP and the NIC (the next
// PUT names them, so Create waits for them), and the DELETEs (the VM's is
// resumed by the next Delete while the VM is Deleting; the NIC's, IP's
// and disk's are waited for). The VM's PUT and Reconfigure's PATCH are
// not: the VM's provisioning state and its report say what became of
// them, and a token of theirs would outlive the operation it names (a
// later VM of the same name, a later PATCH, is another operation). A
// token kept for a resource that is not in the state its operation
// implies (there and not Deleting, for a DELETE; not there, for a PUT)
// is of an operation that ended otherwise, and is dropped.
//
// Where the tokens are kept: in the provider's memory (Provider.lros),
// keyed by the resource's ARM id and the operation, from the moment an
// operation is accepted until a call sees it end. So a call cut short by
// its deadline (the reconciler's budget), or a poll that failed, leaves
// its token, and the next call of the same process resumes the
// operation: no second PUT while the first runs (which ARM would answer
// with a conflict), no second DELETE. They are not kept across processes:
// a function instance that crashed takes its tokens with it, and what
// replaces them is the names (the package doc): the next call reads each
// resource by its deterministic name, sees what the lost operation made
// of it (its provisioningState), and PUTs again with the same body, which
// ARM takes as the same resource once the first operation ended.
// Keeping them elsewhere (the proxy's document) would put a cloud's
// operation URLs into the control plane's records for a gain the names
// already give.

// follow starts the operation begin sends, or resumes it from the token
// kept under key, and waits for it to end, polling every
// Config.PollEvery: the IP's and the NIC's, which the next PUT names.
// A deadline or a failed poll keeps the token for the next call.
func follow[T any](ctx context.Context, p *Provider, key string, begin func(resumeToken string) (*runtime.Poller[T], error)) (T, error) {
	var zero T
	poller, err := start(p, key, begin)
	if err != nil {
		return zero, err
	}
	for !poller.Done() {
		select {
		case <-ctx.Done():
			keep(p, key, poller)
			return zero, ctx.Err()
		case <-time.After(p.cfg.PollEvery):
		}
		if _, err := poller.Poll(ctx); err != nil {
			if classify(err) == provider.KindTransient || ctx.Err() != nil {
				keep(p, key, poller)
			} else {
				// The operation failed: nothing to resume.
				p.forget(key)
			}
			return zero, err
		}
	}
	p.forget(key)
	return poller.Result(ctx)
}

// submit starts (or resumes) the operation, without waiting for its end:
// its token is kept until a call sees it end. It reports whether it has.
func submit[T any](ctx context.Context, p *Provider, key string, begin func(resumeToken string) (*runtime.Poller[T], error)) (bool, error) {
	poller, err := start(p, key, begin)
	if err != nil {
		return false, err
	}
	if !poller.Done() {
		keep(p, key, poller)
		return false, nil
	}
	p.forget(key)
	_, err = poller.Result(ctx)
	return true, err
}

// start resumes the operation of the token kept under key, or begins it;
// a token that does not resume (the SDK refuses it) is dropped and the
// operation begun anew.
func start[T any](p *Provider, key string, begin func(string) (*runtime.Poller[T], error)) (*runtime.Poller[T], error) {
	if token := p.token(key); token != "" {
		poller, err := begin(token)
		if err == nil {
			p.cfg.Log.Debug("azure operation resumed from its token", slog.String("operation", key))
			return poller, nil
		}
		p.cfg.Log.Info("azure operation's token does not resume it; sent again", slog.String("operation", key), slog.Any("error", err))
		p.forget(key)
	}
	return begin("")
}

// keep holds the token of an operation not seen to end.
func keep[T any](p *Provider, key string, poller *runtime.Poller[T]) {
	token, err := poller.ResumeToken()
	if err != nil {
		// Done meanwhile, or a poller without one: nothing to resume.
		return
	}
	p.lros.mu.Lock()
	defer p.lros.mu.Unlock()
	p.lros.tokens[key] = token
}

// token is the token kept under key, or "".
func (p *Provider) token(key string) string {
	p.lros.mu.Lock()
	defer p.lros.mu.Unlock()
	return p.lros.tokens[key]
}

// forget drops the token kept under key.
func (p *Provider) forget(key string) {
	p.lros.mu.Lock()
	defer p.lros.mu.Unlock()
	delete(p.lros.tokens, key)
}

// opKey is the key of an operation on the resource of ARM id id.
func opKey(op, id string) string { return op + " " + id }
