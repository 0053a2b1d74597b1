// Package pricestore keeps the prices the deployment last read in
// Firestore, and refreshes them from each enabled cloud's price source
// (plugin.Plugin.Prices) at most once a day: the pricing.Catalog a
// proxy's cost and a namespace's forecast are computed from, so that no
// request waits on a cloud's price API.
//
// The collection prices holds one document per pricing.Key, its id the
// key's four parts joined by ":" (hetzner:eu-central:fsn1:cx23; a
// region's price has an empty zone: gcp:us-central1::e2-small), with the
// pricing.Price as read, or the reason the cloud gave none (unknown), and
// when it was read. The collection priceRefreshes holds a document per
// cloud: when its prices were last read and last tried, and why the last
// try failed. A failed read keeps the prices of the last good one.
//
// The refresh hangs on the collector's run (the app's CollectGarbage
// calls Refresher.Refresh after each collection, on every Cloud
// Scheduler tick; a cloud read within the day costs the tick one
// document read), so it needs no scheduler of its own.
package pricestore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"cloud.google.com/go/firestore"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/egress-proxies/egress/internal/metering"
	"github.com/egress-proxies/egress/internal/pricing"
)

// The collections, as Firestore names them.
const (
	PricesCollection    = "prices"
	RefreshesCollection = "priceRefreshes"
)

// Every is how often a cloud's prices are read; RetryAfter how long
// after a failed read it is tried again (the collector ticks far more
// often than either).
const (
	Every      = 24 * time.Hour
	RetryAfter = time.Hour
)

// priceDoc is a document of the prices collection.
type priceDoc struct {
	Provider    string `firestore:"provider"`
	Region      string `firestore:"region"`
	Zone        string `firestore:"zone"`
	MachineType string `firestore:"machineType"`
	// Price is the price as read; nil when the cloud gave none (Unknown).
	Price *pricing.Price `firestore:"price"`
	// Unknown is why the cloud gave no price for the key.
	Unknown  string    `firestore:"unknown,omitempty"`
	ReadTime time.Time `firestore:"readTime"`
}

// refreshDoc is a document of the priceRefreshes collection.
type refreshDoc struct {
	// ReadTime is when the cloud's prices were last read whole.
	ReadTime time.Time `firestore:"readTime"`
	// TryTime is when they were last tried, and Error why that failed
	// ("" when it did not).
	TryTime time.Time `firestore:"tryTime"`
	Error   string    `firestore:"error,omitempty"`
	// Prices and Unknown count the keys of the last good read.
	Prices  int `firestore:"prices"`
	Unknown int `firestore:"unknown"`
}

// DocID is the id of key's document: its parts joined by ":". A part
// with "/" or ":" has no document (Firestore's ids take no "/"; ":"
// would make two keys one).
func DocID(key pricing.Key) (string, error) {
	parts := []string{key.Provider, key.Region, key.Zone, key.MachineType}
	for _, p := range parts {
		if strings.ContainsAny(p, "/:") {
			return "", fmt.Errorf("price key %q: a part holds / or :, which a price document's id cannot", strings.Join(parts, " "))
		}
	}
	if key.Provider == "" {
		return "", errors.New("price key: no provider")
	}
	return strings.Join(parts, ":"), nil
}

// Catalog is the pricing.Catalog the store keeps. It is safe for
// concurrent use.
type Catalog struct {
	client *firestore.Client
	// noPrices are the enabled clouds that declare no price source.
	noPrices map[string]bool
}

// NewCatalog is the catalog in client's database. noPrices are the
// enabled clouds whose plugin declares no price source: their prices are
// unknown for pricing.ErrNoPrices's reason, without a read.
func NewCatalog(client *firestore.Client, noPrices ...string) *Catalog {
	c := &Catalog{client: client, noPrices: map[string]bool{}}
	for _, t := range noPrices {
		c.noPrices[t] = true
	}
	return c
}

// Price is pricing.Catalog's: the price of key as last read. A key with a
// zone whose document is missing falls back to its region's (a cloud that
// prices by region, as Google Cloud and AWS do, keeps no zone's), at the
// cost of a second read. Unknown prices are *pricing.UnknownError with
// the reason.
func (c *Catalog) Price(ctx context.Context, key pricing.Key) (pricing.Price, error) {
	if c.noPrices[key.Provider] {
		return pricing.Price{}, &pricing.UnknownError{Key: key, Reason: fmt.Sprintf("cloud %s: %v", key.Provider, pricing.ErrNoPrices)}
	}
	keys := []pricing.Key{key}
	if key.Zone != "" {
		region := key
		region.Zone = ""
		keys = append(keys, region)
	}
	for _, k := range keys {
		id, err := DocID(k)
		if err != nil {
			return pricing.Price{}, &pricing.UnknownError{Key: key, Reason: err.Error()}
		}
		snap, err := c.client.Collection(PricesCollection).Doc(id).Get(ctx)
		metering.Add(ctx, metering.FirestoreRead, 1)
		if status.Code(err) == codes.NotFound {
			continue
		}
		if err != nil {
			return pricing.Price{}, fmt.Errorf("reading the price %s/%s: %w", PricesCollection, id, err)
		}
		var d priceDoc
		if err := snap.DataTo(&d); err != nil {
			return pricing.Price{}, fmt.Errorf("the price %s/%s: %w", PricesCollection, id, err)
		}
		if d.Price == nil {
			return pricing.Price{}, &pricing.UnknownError{Key: key, Reason: d.Unknown}
		}
		return *d.Price, nil
	}
	return pricing.Price{}, &pricing.UnknownError{Key: key,
		Reason: "no price was read for it: the placement is not among those the operator allows, or the daily refresh has not read its cloud yet"}
}

// Cloud is one enabled cloud as the refresh reads it.
type Cloud struct {
	// Type is the provider type.
	Type string
	// Source is the cloud's price source; nil when it declares none
	// (plugin.Plugin.PricesOf's pricing.ErrNoPrices), which the refresh
	// skips.
	Source pricing.Source
	// Keys are the placements the operator allows, as price keys
	// (plugin.Plugin.PricedPlacements).
	Keys []pricing.Key
}

// Refresher reads the clouds' prices into the store.
type Refresher struct {
	client *firestore.Client
	clouds []Cloud
	log    *slog.Logger
}

// NewRefresher is the refresh of clouds' prices into client's database.
func NewRefresher(client *firestore.Client, clouds []Cloud, log *slog.Logger) *Refresher {
	return &Refresher{client: client, clouds: clouds, log: log}
}

// Report is what a refresh did, a cloud at a time, in the clouds' order.
type Report struct {
	Clouds []CloudReport
}

// CloudReport is one cloud's part of a refresh.
type CloudReport struct {
	Type string
	// Read says the cloud's source was asked this run; Skipped why not
	// ("no price source", "read within the day", "failed within the
	// hour").
	Read    bool
	Skipped string
	// Prices and Unknown count the keys written with a price and without.
	Prices, Unknown int
	// Error is why the read failed: the last prices are kept.
	Error string
}

// Refresh reads each cloud's prices whose last good read is a day old
// (Every) or older, and whose last failed try is an hour old (RetryAfter)
// or older, and writes them. A cloud's failure is logged with its type
// and reason, keeps its last prices, and does not stop the others; the
// error returned joins the failures.
func (r *Refresher) Refresh(ctx context.Context, now time.Time) (Report, error) {
	var report Report
	var errs []error
	for _, cl := range r.clouds {
		cr, err := r.refresh(ctx, now, cl)
		report.Clouds = append(report.Clouds, cr)
		if err != nil {
			errs = append(errs, err)
		}
	}
	return report, errors.Join(errs...)
}

func (r *Refresher) refresh(ctx context.Context, now time.Time, cl Cloud) (CloudReport, error) {
	cr := CloudReport{Type: cl.Type}
	log := r.log.With(slog.String("provider", cl.Type))
	if cl.Source == nil {
		cr.Skipped = "no price source"
		return cr, nil
	}
	ref := r.client.Collection(RefreshesCollection).Doc(cl.Type)
	var last refreshDoc
	snap, err := ref.Get(ctx)
	metering.Add(ctx, metering.FirestoreRead, 1)
	switch {
	case status.Code(err) == codes.NotFound:
	case err != nil:
		log.ErrorContext(ctx, "prices: cannot read the last refresh; not read this run", slog.Any("error", err))
		return cr, fmt.Errorf("prices of %s: reading %s/%s: %w", cl.Type, RefreshesCollection, cl.Type, err)
	default:
		if err := snap.DataTo(&last); err != nil {
			return cr, fmt.Errorf("prices of %s: %s/%s: %w", cl.Type, RefreshesCollection, cl.Type, err)
		}
	}
	switch {
	case !last.ReadTime.IsZero() && now.Sub(last.ReadTime) < Every:
		cr.Skipped = "read within the day"
		return cr, nil
	case last.Error != "" && now.Sub(last.TryTime) < RetryAfter:
		cr.Skipped = "failed within the hour"
		return cr, nil
	}
	cr.Read = true
	prices, keyErrs, err := cl.Source.Prices(ctx, cl.Keys)
	if err == nil && (len(prices) != len(cl.Keys) || len(keyErrs) != len(cl.Keys)) {
		err = fmt.Errorf("the source answered %d prices and %d errors for %d keys", len(prices), len(keyErrs), len(cl.Keys))
	}
	if err != nil {
		cr.Error = err.Error()
		log.ErrorContext(ctx, "prices: the cloud's prices could not be read; the last ones are kept",
			slog.Int("keys", len(cl.Keys)), slog.Any("error", err))
		last.TryTime, last.Error = now, err.Error()
		_, werr := ref.Set(ctx, last)
		metering.Add(ctx, metering.FirestoreWrite, 1)
		return cr, errors.Join(fmt.Errorf("prices of %s: %w", cl.Type, err), werr)
	}
	// A document at a time: a cloud's allowed placements are tens, once
	// a day.
	var werrs []error
	written := 0
	for i, k := range cl.Keys {
		id, err := DocID(k)
		if err != nil {
			log.WarnContext(ctx, "prices: a key has no document", slog.Any("error", err))
			continue
		}
		d := priceDoc{Provider: k.Provider, Region: k.Region, Zone: k.Zone, MachineType: k.MachineType, ReadTime: now}
		var u *pricing.UnknownError
		switch e := keyErrs[i]; {
		case e == nil:
			p := prices[i]
			p.ReadTime = now
			d.Price = &p
			cr.Prices++
		case errors.As(e, &u):
			d.Unknown = u.Reason
			cr.Unknown++
		default:
			d.Unknown = e.Error()
			cr.Unknown++
		}
		_, err = r.client.Collection(PricesCollection).Doc(id).Set(ctx, d)
		metering.Add(ctx, metering.FirestoreWrite, 1)
		written++
		if err != nil {
			werrs = append(werrs, fmt.Errorf("%s/%s: %w", PricesCollection, id, err))
		}
	}
	if err := errors.Join(werrs...); err != nil {
		// The next tick tries again within the hour.
		cr.Error = err.Error()
		last.TryTime, last.Error = now, "writing the prices: "+err.Error()
		_, _ = ref.Set(ctx, last)
		metering.Add(ctx, metering.FirestoreWrite, 1)
		log.ErrorContext(ctx, "prices: writing the prices failed", slog.Int("failed", len(werrs)), slog.Any("error", err))
		return cr, fmt.Errorf("prices of %s: %d of %d documents not written: %w", cl.Type, len(werrs), written, err)
	}
	_, err = ref.Set(ctx, refreshDoc{ReadTime: now, TryTime: now, Prices: cr.Prices, Unknown: cr.Unknown})
	metering.Add(ctx, metering.FirestoreWrite, 1)
	log.InfoContext(ctx, "prices: refreshed", slog.Int("prices", cr.Prices), slog.Int("unknown", cr.Unknown))
	if err != nil {
		return cr, fmt.Errorf("prices of %s: writing %s/%s: %w", cl.Type, RefreshesCollection, cl.Type, err)
	}
	return cr, nil
}
