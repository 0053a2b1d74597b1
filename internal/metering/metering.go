// Package metering counts what each function invocation costs — Firestore
// document reads and writes, provider calls by method, Pub/Sub messages
// published — and logs it, when the invocation ends, as one structured line:
//
//	{"severity":"INFO","message":"invocation","function":"Reconcile","outcome":"ok",
//	 "latencyMs":812.4,"usage":{"firestoreReads":1,"firestoreWrites":3,"providerCreate":1,…}}
//
// Those lines are the product's metrics. In production Cloud Logging turns
// their fields into log-based metrics (deploy/terraform/metrics.tf), and
// locally `make bench` sums the same lines, so an operator and the benchmark
// see the same figures. A line rather than OpenTelemetry, because a Cloud Run
// function gets CPU only while it serves a request: a periodic exporter's
// push in the background would stall between requests, and a push at the end
// of every invocation would overrun Cloud Monitoring's limit of one point per
// series every few seconds. A log line is written within the request and
// needs no other API, role or dependency.
//
// The counters travel in the context: Start gives an invocation's context a
// tally, and the store, the queue and the provider decorator (Provider) add
// to whatever tally the context they are called with carries. Code called
// without one counts nothing, so the simulation and the unit tests need no
// set-up.
package metering

import (
	"context"
	"log/slog"
	"reflect"
	"strings"
	"sync/atomic"
	"time"
)

// Counter names one thing counted.
type Counter int

const (
	// FirestoreRead is one document read, as Firestore bills it: a document
	// returned by a get or a query, a get of a missing document, and a query
	// that returns nothing each count one.
	FirestoreRead Counter = iota
	// FirestoreWrite is one document written or deleted by a commit that
	// succeeded.
	FirestoreWrite
	ProviderCreate
	ProviderGet
	ProviderDelete
	ProviderListByTag
	// ProviderReconfigure is a provider.Reconfigurer's Reconfigure: a
	// running VM given a new configuration.
	ProviderReconfigure
	// ProviderError is a provider call that returned an error, ErrNotFound
	// included.
	ProviderError
	// PubSubPublished is one message Pub/Sub accepted.
	PubSubPublished

	numCounters
)

// Usage is what an invocation, or a sum of them, cost. Its JSON names are the
// field names of the log line, which the log-based metrics and the benchmark
// read.
type Usage struct {
	FirestoreReads      int64 `json:"firestoreReads"`
	FirestoreWrites     int64 `json:"firestoreWrites"`
	ProviderCreate      int64 `json:"providerCreate"`
	ProviderGet         int64 `json:"providerGet"`
	ProviderDelete      int64 `json:"providerDelete"`
	ProviderListByTag   int64 `json:"providerListByTag"`
	ProviderReconfigure int64 `json:"providerReconfigure"`
	ProviderErrors      int64 `json:"providerErrors"`
	PubSubPublished     int64 `json:"pubsubPublished"`
}

// LogValue makes the usage a group of its fields on a log line, so the text
// handler prints it as usage.firestoreReads=1 … as the JSON handler prints
// an object, rather than a Go struct.
// The fields are read off the struct, under their JSON names, so a field
// added to Usage is on the line without anyone listing it here.
func (u Usage) LogValue() slog.Value {
	v := reflect.ValueOf(u)
	attrs := make([]slog.Attr, v.NumField())
	for i := range attrs {
		name, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("json"), ",")
		attrs[i] = slog.Int64(name, v.Field(i).Int())
	}
	return slog.GroupValue(attrs...)
}

// Plus returns the sum of u and v.
func (u Usage) Plus(v Usage) Usage {
	return Usage{
		FirestoreReads:      u.FirestoreReads + v.FirestoreReads,
		FirestoreWrites:     u.FirestoreWrites + v.FirestoreWrites,
		ProviderCreate:      u.ProviderCreate + v.ProviderCreate,
		ProviderGet:         u.ProviderGet + v.ProviderGet,
		ProviderDelete:      u.ProviderDelete + v.ProviderDelete,
		ProviderListByTag:   u.ProviderListByTag + v.ProviderListByTag,
		ProviderReconfigure: u.ProviderReconfigure + v.ProviderReconfigure,
		ProviderErrors:      u.ProviderErrors + v.ProviderErrors,
		PubSubPublished:     u.PubSubPublished + v.PubSubPublished,
	}
}

// Minus returns u less v.
func (u Usage) Minus(v Usage) Usage {
	return u.Plus(Usage{
		FirestoreReads:      -v.FirestoreReads,
		FirestoreWrites:     -v.FirestoreWrites,
		ProviderCreate:      -v.ProviderCreate,
		ProviderGet:         -v.ProviderGet,
		ProviderDelete:      -v.ProviderDelete,
		ProviderListByTag:   -v.ProviderListByTag,
		ProviderReconfigure: -v.ProviderReconfigure,
		ProviderErrors:      -v.ProviderErrors,
		PubSubPublished:     -v.PubSubPublished,
	})
}

// tally counts one invocation's usage. It is safe for concurrent use: a
// garbage-collection run deletes in parallel.
type tally struct {
	counts [numCounters]atomic.Int64
}

// usage returns what has been counted so far.
func (t *tally) usage() Usage {
	get := func(c Counter) int64 { return t.counts[c].Load() }
	return Usage{
		FirestoreReads:      get(FirestoreRead),
		FirestoreWrites:     get(FirestoreWrite),
		ProviderCreate:      get(ProviderCreate),
		ProviderGet:         get(ProviderGet),
		ProviderDelete:      get(ProviderDelete),
		ProviderListByTag:   get(ProviderListByTag),
		ProviderReconfigure: get(ProviderReconfigure),
		ProviderErrors:      get(ProviderError),
		PubSubPublished:     get(PubSubPublished),
	}
}

type tallyKey struct{}

// Add counts n of c in the tally ctx carries, if it carries one.
func Add(ctx context.Context, c Counter, n int64) {
	if t, ok := ctx.Value(tallyKey{}).(*tally); ok {
		t.counts[c].Add(n)
	}
}

// Invocation is one function invocation being metered.
type Invocation struct {
	function string
	start    time.Time
	tally    tally
}

// Start begins metering an invocation of function and returns the context
// to run it with.
func Start(ctx context.Context, function string) (context.Context, *Invocation) {
	inv := &Invocation{function: function, start: time.Now()}
	return context.WithValue(ctx, tallyKey{}, &inv.tally), inv
}

// Outcomes of an invocation.
const (
	// OK: the invocation did its work (an HTTP answer below 500 included).
	OK = "ok"
	// Failed: the invocation failed and its event will be delivered again
	// (or, over HTTP, it answered 500 or more).
	Failed = "error"
	// Ignored: the event could not be read and was acknowledged unread.
	Ignored = "ignored"
)

// Message is the message of every invocation line, what a log filter or a
// log-based metric selects them by.
const Message = "invocation"

// End logs the invocation's line: the function, the outcome, the latency,
// the usage, and attrs (the trigger, an HTTP status).
func (inv *Invocation) End(ctx context.Context, log *slog.Logger, outcome string, attrs ...slog.Attr) {
	all := append([]slog.Attr{
		slog.String("function", inv.function),
		slog.String("outcome", outcome),
		slog.Float64("latencyMs", float64(time.Since(inv.start).Microseconds())/1000),
		slog.Any("usage", inv.tally.usage()),
	}, attrs...)
	log.LogAttrs(ctx, slog.LevelInfo, Message, all...)
}

// Usage returns what the invocation has cost so far.
func (inv *Invocation) Usage() Usage { return inv.tally.usage() }
