package app_test

import (
	"context"
	"encoding/json"
	"testing"

	"cloud.google.com/go/firestore"
	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/emulators/emulatortest"
	"github.com/egress-proxies/egress/internal/app"
	"github.com/egress-proxies/egress/internal/pricing"
	"github.com/egress-proxies/egress/internal/pricing/pricestore"
	"github.com/egress-proxies/egress/internal/provider/mock"
	"github.com/egress-proxies/egress/internal/provider/plugin"
	"github.com/egress-proxies/egress/internal/queue"
)

// TestCollectGarbageRefreshesPrices: a collector's tick reads the enabled
// clouds' prices into the store, for the placements their settings allow
// (the mock's fixed list), and the catalog reads them back.
func TestCollectGarbageRefreshesPrices(t *testing.T) {
	emulatortest.Firestore(t)
	emulatortest.PubSub(t)
	project := emulatortest.ProjectID(t)
	a, err := app.New(context.Background(), env(map[string]string{"GOOGLE_CLOUD_PROJECT": project, "PROVIDERS": "mock"}),
		app.Options{Serve: []app.Function{app.CollectGarbage}, Linked: []plugin.Plugin{mock.Plugin}})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	e := event.New()
	e.SetID("tick-1")
	e.SetSource("//pubsub.googleapis.com/projects/" + project + "/topics/proxy-gc")
	e.SetType(queue.MessagePublishedType)
	data, _ := json.Marshal(queue.MessagePublishedData{Message: queue.Message{Data: []byte("{}"), MessageID: "m-1"}})
	if err := e.SetData("application/json", data); err != nil {
		t.Fatal(err)
	}
	if err := a.CollectGarbage(context.Background(), e); err != nil {
		t.Fatal(err)
	}
	client, err := firestore.NewClient(context.Background(), project)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	docs, err := client.Collection(pricestore.PricesCollection).Documents(context.Background()).GetAll()
	if err != nil {
		t.Fatal(err)
	}
	p, err := pricestore.NewCatalog(client, a.NoPrices()...).Price(context.Background(), pricing.Key{Provider: "mock", Region: "us-central1", Zone: "us-central1-a"})
	if err != nil {
		t.Fatal(err)
	}
	type seen struct {
		Documents int
		VMPerHour pricing.Money
	}
	if diff := cmp.Diff(seen{len(mock.PricedRegions), mock.PriceVMPerHour}, seen{len(docs), p.VMPerHour}); diff != "" {
		t.Errorf("after a tick (-want +got):\n%s", diff)
	}
}

// The emulators a test of the package starts are stopped when it ends.
func TestMain(m *testing.M) { emulatortest.Main(m) }
