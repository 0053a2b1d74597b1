package store

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/url"
	"strconv"
	"time"

	"cloud.google.com/go/firestore"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/egress-proxies/egress/internal/clock"
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
// document a shard, changed by a write conditioned on the read. It is
// safe for concurrent use.
type Pacing struct {
	client *firestore.Client
	// locks queue this process's updates of one shard (see
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

// Update reads the shard and writes what change returns on the
// condition that nothing wrote the shard since (a create where there was
// none, an update on the update time read), and reads again when a write
// came between.
//
// Not a transaction: a transaction's read locks the shard, and two
// instances that read one shard and then both write it wait on each
// other's lock until Firestore gives one up (the emulator after about
// 2 s). Every instance whose reservation asks that shard meanwhile waits
// behind the lock, and the shard's untaken slots make it the earliest
// that every pacer finds: a burst through two accounts lost 1 to 3 s of
// its 12 in such stalls. A read takes no lock, and a conditioned write
// that lost its race costs one more read, not seconds.
func (p *Pacing) Update(ctx context.Context, s pacing.Shard, change func(pacing.Counts) (pacing.Counts, bool)) error {
	ref := p.ref(s)
	release, err := p.locks.acquire(ctx, ref.ID)
	if err != nil {
		return fmt.Errorf("%s: waiting for this process's update of it: %w", ref.Path, err)
	}
	defer release()
	for try := range pacingAttempts {
		if try > 0 {
			// Lost a race: another instance wrote the shard between this
			// read and write. A short random pause, so that instances that
			// met do not meet again at once.
			if err := (clock.Real{}).Sleep(ctx, time.Duration(rand.Int64N(int64(pacingRetryPause)))); err != nil {
				return fmt.Errorf("budget shard %s: %w", ref.Path, err)
			}
		}
		metering.Add(ctx, metering.FirestoreRead, 1)
		snap, err := ref.Get(ctx)
		exists := err == nil
		counts := pacing.Counts{}
		switch {
		case exists:
			var d shardDoc
			if err := snap.DataTo(&d); err != nil {
				return fmt.Errorf("decoding budget shard %s: %w", ref.Path, err)
			}
			for k, v := range d.Windows {
				w, err := strconv.ParseInt(k, 10, 64)
				if err != nil {
					return fmt.Errorf("budget shard %s: window %q is not a window's index", ref.Path, k)
				}
				counts[w] = int(v)
			}
		case status.Code(err) != codes.NotFound:
			return fmt.Errorf("budget shard %s: %w", ref.Path, err)
		}
		next, write := change(counts)
		if !write {
			return nil
		}
		windows := map[string]int64{}
		for w, n := range next {
			windows[strconv.FormatInt(w, 10)] = int64(n)
		}
		if exists {
			_, err = ref.Update(ctx, []firestore.Update{{Path: windowsField, Value: windows}}, firestore.LastUpdateTime(snap.UpdateTime))
		} else {
			_, err = ref.Create(ctx, shardDoc{Type: s.Key.Type, Account: s.Key.Account, Shard: s.Index, Windows: windows})
		}
		switch status.Code(err) {
		case codes.OK:
			metering.Add(ctx, metering.FirestoreWrite, 1)
			return nil
		case codes.FailedPrecondition, codes.AlreadyExists, codes.NotFound:
			continue
		default:
			return fmt.Errorf("budget shard %s: %w", ref.Path, err)
		}
	}
	// Other instances won every race: another shard may have room.
	return fmt.Errorf("budget shard %s: %w: another write came between each of %d reads and its write", ref.Path, pacing.ErrContended, pacingAttempts)
}

const (
	// pacingAttempts is how many reads and conditioned writes an Update
	// tries before it leaves the shard to the instances that keep
	// winning it.
	pacingAttempts = 8
	// pacingRetryPause bounds the random pause before a read again.
	pacingRetryPause = 20 * time.Millisecond
)
