package gc_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/account"
	"github.com/egress-proxies/egress/internal/clock"
	"github.com/egress-proxies/egress/internal/gc"
	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/provider/mock"
	"github.com/egress-proxies/egress/internal/proxy"
)

// accountList is the accounts collection as the collector reads it.
type accountList struct {
	list []account.Account
	err  error
}

func (a accountList) ListAccounts(context.Context) ([]account.Account, error) { return a.list, a.err }

// TestAccounts: the collector lists every account of every type, the
// draining ones too, and decides each instance by its (type, account)
// and uid: an instance in one account is never kept on the strength of
// a claim of the same uid in another, and another deployment's is kept
// as in the default account.
func TestAccounts(t *testing.T) {
	clk := clock.NewFake(epoch)
	ctx := context.Background()
	byAccount := map[string]*mock.Provider{"": mock.New(mock.Options{Clock: clk}), "second": mock.New(mock.Options{Clock: clk}), "third": mock.New(mock.Options{Clock: clk})}
	reg := provider.NewRegistry()
	ctorOf := func(acct provider.AccountSpec) (provider.Constructor, error) {
		return func(context.Context) (provider.Provider, error) { return byAccount[acct.ID], nil }, nil
	}
	def, _ := ctorOf(provider.AccountSpec{})
	if err := reg.Register(mock.Type, def, provider.PerAccount(ctorOf)); err != nil {
		t.Fatal(err)
	}
	set := provider.NewSet(reg).WithAccounts(func(_ context.Context, id string) (string, provider.AccountSpec, error) {
		if _, ok := byAccount[id]; !ok {
			return "", provider.AccountSpec{}, provider.ErrNoAccount
		}
		return mock.Type, provider.AccountSpec{}, nil
	})
	accounts := accountList{list: []account.Account{
		{ID: "second", Provider: mock.Type, State: account.Active},
		{ID: "third", Provider: mock.Type, State: account.Draining},
		{ID: "elsewhere", Provider: "gcp", State: account.Active}, // a type not configured: not listed
	}}

	claims := map[string]proxy.Claim{}
	claim := func(uid, acct string) {
		claims[uid] = proxy.Claim{Key: proxy.Key{Namespace: "ns", Name: fmt.Sprintf("doc-%d", len(claims))}, Phase: proxy.PhaseCreating, Provider: mock.Type, Account: acct}
	}
	claim("uid-default", "")
	claim("uid-second", "second")
	claim("uid-third", "third")
	claim("uid-gone", "gone") // an account whose document was deleted
	create(t, byAccount[""], "uid-default")
	create(t, byAccount[""], "uid-second") // a twin in the wrong account: garbage
	create(t, byAccount[""], "uid-orphan-1")
	create(t, byAccount["second"], "uid-second")
	create(t, byAccount["second"], "uid-default") // a twin again
	create(t, byAccount["second"], "uid-orphan-2")
	create(t, byAccount["second"].InDeployment("staging"), "uid-staging")
	create(t, byAccount["third"], "uid-third")
	create(t, byAccount["third"], "uid-orphan-3")
	clk.Advance(time.Hour)

	c := gc.New(set, &fakeStore{uids: claims}, &fakeRequeuer{}, clk, slog.New(slog.DiscardHandler), gc.Options{Accounts: accounts})
	report, err := c.Run(ctx)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	want := []gc.Summary{
		{Provider: mock.Type, Account: "", Scanned: 3, Claimed: 1, Orphaned: 2, Deleted: 2},
		{Provider: mock.Type, Account: "second", Scanned: 3, Claimed: 1, Orphaned: 2, Deleted: 2},
		{Provider: mock.Type, Account: "third", Scanned: 2, Claimed: 1, Orphaned: 1, Deleted: 1},
	}
	if diff := cmp.Diff(want, report.Providers); diff != "" {
		t.Errorf("summaries by account (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"mock/gone"}, report.UnknownAccounts); diff != "" {
		t.Errorf("accounts documents name without a document (-want +got):\n%s", diff)
	}
	left := map[string][]string{}
	for id, p := range byAccount {
		for _, in := range p.Instances() {
			left[id] = append(left[id], in.UID)
		}
	}
	// The staging deployment's instance shares the second account's
	// project, and is not even listed.
	wantLeft := map[string][]string{"": {"uid-default"}, "second": {"uid-second", "uid-staging"}, "third": {"uid-third"}}
	if diff := cmp.Diff(wantLeft, left); diff != "" {
		t.Errorf("instances left by account (-want +got):\n%s", diff)
	}

	// Accounts that cannot be read: the defaults alone are listed, and
	// the run says it is incomplete.
	c = gc.New(set, &fakeStore{uids: claims}, &fakeRequeuer{}, clk, slog.New(slog.DiscardHandler), gc.Options{Accounts: accountList{err: errors.New("unavailable")}})
	report, err = c.Run(ctx)
	if !errors.Is(err, gc.ErrIncomplete) {
		t.Errorf("Run with the accounts unreadable: %v, want ErrIncomplete", err)
	}
	if diff := cmp.Diff([]gc.Summary{{Provider: mock.Type, Scanned: 1, Claimed: 1}}, report.Providers); diff != "" {
		t.Errorf("summaries with the accounts unreadable (-want +got):\n%s", diff)
	}
	if len(report.UnknownAccounts) != 0 {
		t.Errorf("with the accounts unreadable, accounts named without a document: %v, want none named (none was looked for)", report.UnknownAccounts)
	}
}
