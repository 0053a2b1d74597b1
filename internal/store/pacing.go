package store

import (
	"context"
	"fmt"
	"net/url"
	"strconv"

	"cloud.google.com/go/firestore"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/egress-proxies/egress/internal/metering"
	"github.com/egress-proxies/egress/internal/pacing"
)

// PacingCollection holds the shards of the budgets of calls to the cloud
// accounts (package pacing): pacing/{type}~{account}~{shard}, the
// account "-" for the deployment's default one. No trigger watches it.
const PacingCollection = "pacing"

// windowsField is a shard's counts: a map from the window's index, in
// decimal (a map's keys are strings), to its calls.
const windowsField = "windows"

// Pacing is the Firestore store of the budgets, pacing.Store: one
// document a shard, changed in a transaction. It is safe for concurrent
// use.
type Pacing struct {
	client *firestore.Client
	// locks queue this process's transactions on one shard (see
	// keyedLock): the pacer asks another shard when one is full, so the
	// queue is short, and the process never contends with itself.
	locks keyedLock
}

var _ pacing.Store = (*Pacing)(nil)

// NewPacing is the budgets' store in client's database.
func NewPacing(client *firestore.Client) *Pacing { return &Pacing{client: client} }

// shardDoc is a shard as stored.
type shardDoc struct {
	Type    string           `firestore:"type"`
	Account string           `firestore:"account"`
	Shard   int              `firestore:"shard"`
	Windows map[string]int64 `firestore:"windows"`
}

func (p *Pacing) ref(s pacing.Shard) *firestore.DocumentRef {
	account := s.Key.Account
	if account == "" {
		account = "-"
	}
	// An account id may hold characters a document ID may not (a slash).
	return p.client.Collection(PacingCollection).Doc(url.PathEscape(s.Key.Type) + "~" + url.PathEscape(account) + "~" + strconv.Itoa(s.Index))
}

// Update reads the shard and writes what change returns, in one
// transaction.
func (p *Pacing) Update(ctx context.Context, s pacing.Shard, change func(pacing.Counts) (pacing.Counts, bool)) error {
	ref := p.ref(s)
	release, err := p.locks.acquire(ctx, ref.ID)
	if err != nil {
		return fmt.Errorf("%s: waiting for this process's transaction on it: %w", ref.Path, err)
	}
	defer release()
	var reads, writes int64
	err = p.client.RunTransaction(ctx, func(ctx context.Context, tx *firestore.Transaction) error {
		reads, writes = 1, 0
		snap, err := tx.Get(ref)
		if err != nil && status.Code(err) != codes.NotFound {
			return err
		}
		counts := pacing.Counts{}
		if snap != nil && snap.Exists() {
			var d shardDoc
			if err := snap.DataTo(&d); err != nil {
				return fmt.Errorf("decoding: %w", err)
			}
			for k, v := range d.Windows {
				w, err := strconv.ParseInt(k, 10, 64)
				if err != nil {
					return fmt.Errorf("window %q is not a window's index", k)
				}
				counts[w] = int(v)
			}
		}
		next, write := change(counts)
		if !write {
			return nil
		}
		d := shardDoc{Type: s.Key.Type, Account: s.Key.Account, Shard: s.Index, Windows: map[string]int64{}}
		for w, n := range next {
			d.Windows[strconv.FormatInt(w, 10)] = int64(n)
		}
		writes = 1
		return tx.Set(ref, d)
	})
	metering.Add(ctx, metering.FirestoreRead, reads)
	metering.Add(ctx, metering.FirestoreWrite, writes)
	switch code := status.Code(err); {
	case err == nil:
		return nil
	case code == codes.Aborted || code == codes.FailedPrecondition:
		// Other instances held the shard past the client's retries (the
		// emulator says "Transaction lock timeout"): another shard may
		// have room.
		return fmt.Errorf("budget shard %s: %w: %w", ref.Path, pacing.ErrContended, err)
	default:
		return fmt.Errorf("budget shard %s: %w", ref.Path, err)
	}
}
