package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/clock"
	"github.com/egress-proxies/egress/internal/httpapi"
	"github.com/egress-proxies/egress/internal/pricing"
	"github.com/egress-proxies/egress/internal/provider/mock"
	"github.com/egress-proxies/egress/internal/proxy"
	"github.com/egress-proxies/egress/internal/spend"
	"github.com/egress-proxies/egress/internal/store/storefake"
	"github.com/egress-proxies/egress/internal/tenancy"
)

// costedEnv is the API over the in-memory store at clk, costing the mock's
// proxies in us-central1 at 0.10 EUR an hour, in EUR.
func costedEnv(t *testing.T, clk clock.Clock) *env {
	t.Helper()
	return newEnv(t, storefake.New(clk), clk, costed(t))
}

// costed costs the mock's proxies in us-central1 at 0.10 EUR an hour, in
// EUR.
func costed(t *testing.T) func(*httpapi.Options) {
	t.Helper()
	rates, err := pricing.ParseRates("EUR", "")
	if err != nil {
		t.Fatal(err)
	}
	price := pricing.Price{Provider: mock.Type, Region: "us-central1", VMPerHour: pricing.Money{Currency: "EUR", Nanos: 100_000_000}}
	catalog := spend.StaticCatalog{{Provider: mock.Type, Region: "us-central1"}: price}
	return func(o *httpapi.Options) { o.Costs = spend.Costs{Catalog: catalog, Rates: rates} }
}

// TestBudgetRefusesTheCreateThatWouldExceed: a namespace's budget, which
// only a platform admin sets, refuses the create whose forecast would take
// the namespace's month over it (429 BUDGET_EXCEEDED, naming the forecast
// and the budget), and nothing is created; raised, the same create passes,
// and the namespace shows its month.
//
// On 2026-12-16 at 00:00 UTC, 384 hours are left of December: each proxy
// made then at 0.10 EUR an hour is forecast 38.40 EUR. A budget of 100.00
// EUR holds two (76.80 EUR); a third would make 115.20 EUR.
func TestBudgetRefusesTheCreateThatWouldExceed(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 12, 16, 0, 0, 0, 0, time.UTC))
	e := costedEnv(t, clk)
	type answer struct {
		Code    int
		Reason  string
		Message string `json:",omitempty"`
		Proxies int
	}
	proxies := "/v1/namespaces/team-b/proxies"
	look := func(who, method, path, body string) answer {
		t.Helper()
		resp, b := e.do(who, method, path, body)
		a := answer{Code: resp.StatusCode}
		if resp.StatusCode >= 400 {
			ae := decodeErr(t, b)
			a.Reason = ae.reason()
			if a.Reason == httpapi.ReasonBudgetExceeded {
				a.Message = ae.Error.Message
			}
		}
		_, lb := e.do(admin, "GET", proxies, "")
		var list struct{ Proxies []json.RawMessage }
		_ = json.Unmarshal(lb, &list)
		a.Proxies = len(list.Proxies)
		return a
	}
	steps := []struct {
		reason, who, method, path, body string
		want                            answer
	}{
		{"an admin makes the namespace", admin, "PUT", "/v1/namespaces/team-b", `{"members":{"` + owner + `":"owner","` + editor + `":"editor"}}`,
			answer{Code: 201}},
		{"its owner may not give it a budget: the platform's money", owner, "PATCH", "/v1/namespaces/team-b", `{"budget":{"monthly":"100.00","currency":"EUR"}}`,
			answer{Code: 403, Reason: httpapi.ReasonAdminRequired}},
		{"a budget in another currency than the deployment's", admin, "PATCH", "/v1/namespaces/team-b", `{"budget":{"monthly":"100.00","currency":"USD"}}`,
			answer{Code: 400, Reason: httpapi.ReasonBudgetInvalid}},
		{"stopTraffic is taken: the engines stop at the budget", admin, "PATCH", "/v1/namespaces/team-b", `{"budget":{"monthly":"100.00","currency":"EUR","atBudget":"stopTraffic"}}`,
			answer{Code: 200}},
		{"an atBudget of no meaning is not", admin, "PATCH", "/v1/namespaces/team-b", `{"budget":{"monthly":"100.00","currency":"EUR","atBudget":"pause"}}`,
			answer{Code: 400, Reason: httpapi.ReasonBudgetInvalid}},
		{"an admin gives it 100.00 EUR", admin, "PATCH", "/v1/namespaces/team-b", `{"budget":{"monthly":"100.00","currency":"EUR"}}`,
			answer{Code: 200}},
		{"the first proxy: 38.40 EUR", editor, "POST", proxies, body("a1", goodSpec), answer{Code: 201, Proxies: 1}},
		{"the second: 76.80 EUR", editor, "POST", proxies, body("a2", goodSpec), answer{Code: 201, Proxies: 2}},
		{"the third would make 115.20 EUR: refused, nothing made", editor, "POST", proxies, body("a3", goodSpec),
			answer{Code: 429, Reason: httpapi.ReasonBudgetExceeded, Proxies: 2,
				Message: `namespace "team-b"'s forecast for 2026-12 would be 115.20 EUR with proxy a3, over its monthly budget of 100.00 EUR; delete a proxy, or ask a platform admin for a larger budget`}},
		{"an admin raises the budget to 120.00 EUR", admin, "PATCH", "/v1/namespaces/team-b", `{"budget":{"monthly":"120.00","currency":"EUR"}}`,
			answer{Code: 200, Proxies: 2}},
		{"the third fits", editor, "POST", proxies, body("a3", goodSpec), answer{Code: 201, Proxies: 3}},
		{"a fourth would make 153.60 EUR", editor, "POST", proxies, body("a4", goodSpec),
			answer{Code: 429, Reason: httpapi.ReasonBudgetExceeded, Proxies: 3,
				Message: `namespace "team-b"'s forecast for 2026-12 would be 153.60 EUR with proxy a4, over its monthly budget of 120.00 EUR; delete a proxy, or ask a platform admin for a larger budget`}},
		{"a create repeated for a proxy that exists makes nothing: answered, not refused", editor, "POST", proxies, body("a1", goodSpec),
			answer{Code: 200, Proxies: 3}},
	}
	for _, st := range steps {
		if diff := cmp.Diff(st.want, look(st.who, st.method, st.path, st.body)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", st.reason, diff)
		}
	}
	// The namespace shows its month: three proxies forecast 38.40 EUR each.
	_, b := e.do(owner, "GET", "/v1/namespaces/team-b", "")
	var ns struct {
		Month struct {
			MonthToDate, Forecast pricing.Money
		}
	}
	if err := json.Unmarshal(b, &ns); err != nil {
		t.Fatal(err)
	}
	want := pricing.Money{Currency: "EUR", Nanos: 115_200_000_000}
	if diff := cmp.Diff(want, ns.Month.Forecast); diff != "" {
		t.Errorf("the namespace's forecast (-want +got):\n%s\n%s", diff, b)
	}
}

// TestNamespaceShowsTrafficStopped: a namespace whose month reached a
// budget that stops traffic shows the record the collector's tick wrote
// (trafficStopped: the month and why) to its members, in the shape the
// OpenAPI document gives (the env's client holds every answer to it);
// one that carries shows none.
func TestNamespaceShowsTrafficStopped(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 12, 16, 0, 0, 0, 0, time.UTC))
	e := costedEnv(t, clk)
	if resp, b := e.do(admin, "PUT", "/v1/namespaces/team-b", `{"members":{"`+owner+`":"owner"}}`); resp.StatusCode != 201 {
		t.Fatalf("making the namespace: %d %s", resp.StatusCode, b)
	}
	if resp, b := e.do(admin, "PATCH", "/v1/namespaces/team-b", `{"budget":{"monthly":"1.00","currency":"EUR","atBudget":"stopTraffic"}}`); resp.StatusCode != 200 {
		t.Fatalf("giving it a budget that stops traffic: %d %s", resp.StatusCode, b)
	}
	shown := func() *tenancy.TrafficStopped {
		t.Helper()
		resp, b := e.do(owner, "GET", "/v1/namespaces/team-b", "")
		if resp.StatusCode != 200 {
			t.Fatalf("GET: %d %s", resp.StatusCode, b)
		}
		var ns struct{ TrafficStopped *tenancy.TrafficStopped }
		if err := json.Unmarshal(b, &ns); err != nil {
			t.Fatal(err)
		}
		return ns.TrafficStopped
	}
	if got := shown(); got != nil {
		t.Errorf("a namespace that carries shows trafficStopped %+v", got)
	}
	stopped := &tenancy.TrafficStopped{Month: "2026-12", Reason: "the namespace's month 2026-12 is 1.00 EUR so far, at its monthly budget of 1.00 EUR, which stops traffic there"}
	if _, err := e.store.UpdateNamespace(context.Background(), "team-b", func(ns *tenancy.Namespace) error {
		ns.TrafficStopped = stopped
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(stopped, shown()); diff != "" {
		t.Errorf("the stopped namespace's trafficStopped (-want +got):\n%s", diff)
	}
}

// racingStore lets race run, once, right after a listing of a namespace's
// proxies: a request that reads the month there and commits later meets
// a create that committed in between.
type racingStore struct {
	testStore
	race func()
}

func (s *racingStore) List(ctx context.Context, namespace string, pageSize int, pageToken string) ([]*proxy.Proxy, string, error) {
	page, next, err := s.testStore.List(ctx, namespace, pageSize, pageToken)
	if r := s.race; r != nil {
		s.race = nil
		r()
	}
	return page, next, err
}

// TestBudgetHoldsAgainstAConcurrentCreate: two creates that each fit a
// namespace's budget, and not together, race: the second reads the month
// (one proxy, 38.40 EUR) and, before its transaction, the first commits.
// The month read is outdated by that create (spend.Admit), so the second
// reads it again and is refused: the namespace holds two proxies, 76.80
// EUR of its 100.00, never three (115.20). On the in-memory store and the
// Firestore emulator alike.
func TestBudgetHoldsAgainstAConcurrentCreate(t *testing.T) {
	for _, tc := range []struct {
		name  string
		store func(*testing.T, clock.Clock) testStore
	}{
		{"memory", func(_ *testing.T, clk clock.Clock) testStore { return storefake.New(clk) }},
		{"firestore", func(t *testing.T, _ clock.Clock) testStore { return firestoreStore(t) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := clock.NewFake(time.Date(2026, 12, 16, 0, 0, 0, 0, time.UTC))
			st := &racingStore{testStore: tc.store(t, clk)}
			e := newEnv(t, st, clk, costed(t))
			proxies := "/v1/namespaces/team-r/proxies"
			for _, r := range []struct{ who, method, path, body string }{
				{admin, "PUT", "/v1/namespaces/team-r", `{"members":{"` + owner + `":"owner","` + editor + `":"editor"}}`},
				{admin, "PATCH", "/v1/namespaces/team-r", `{"budget":{"monthly":"100.00","currency":"EUR"}}`},
				{editor, "POST", proxies, body("r1", goodSpec)},
			} {
				if resp, b := e.do(r.who, r.method, r.path, r.body); resp.StatusCode >= 300 {
					t.Fatalf("%s %s: %d %s", r.method, r.path, resp.StatusCode, b)
				}
			}
			type answer struct {
				Code   int
				Reason string
			}
			answerOf := func(resp *http.Response, b []byte) answer {
				a := answer{Code: resp.StatusCode}
				if resp.StatusCode >= 400 {
					a.Reason = decodeErr(t, b).reason()
				}
				return a
			}
			var first answer
			st.race = func() { first = answerOf(e.do(editor, "POST", proxies, body("r2", goodSpec))) }
			second := answerOf(e.do(editor, "POST", proxies, body("r3", goodSpec)))
			_, b := e.do(owner, "GET", "/v1/namespaces/team-r", "")
			var ns struct {
				ProxyCount int64
				Month      struct{ Forecast pricing.Money }
			}
			if err := json.Unmarshal(b, &ns); err != nil {
				t.Fatal(err)
			}
			type outcome struct {
				First, Second answer
				Proxies       int64
				Forecast      pricing.Money
			}
			want := outcome{answer{Code: 201}, answer{Code: 429, Reason: httpapi.ReasonBudgetExceeded}, 2, pricing.Money{Currency: "EUR", Nanos: 76_800_000_000}}
			if diff := cmp.Diff(want, outcome{first, second, ns.ProxyCount, ns.Month.Forecast}); diff != "" {
				t.Errorf("two racing creates under a budget for one (-want +got):\n%s", diff)
			}
		})
	}
}
