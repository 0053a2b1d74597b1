// Package eventarc is the local stand-in for Eventarc: it turns what the
// emulators emit into the CloudEvents that Eventarc delivers in production,
// and delivers them to the functions with retries.
//
//   - Firestore: the Firestore emulator pushes document changes itself when
//     started with --functions_emulator and given an eventarcTrigger (its own
//     hook, measured in EMULATORS.md). Its pushes need mending before a
//     function may see them: the body is the base64 text of the protobuf
//     DocumentEventData rather than the bytes, ce-source doubles "projects/",
//     and a failed delivery is never retried. FirestoreRelay receives the
//     pushes, mends them into binary-mode CloudEvents exactly as Eventarc sends
//     them (Content-Type application/protobuf, the firestore extension
//     attributes) and delivers them with retries and backoff. The emulator's
//     push was chosen over a listener on Firestore's snapshot stream because it
//     carries each commit's value and old value, one event per write, as
//     Eventarc does; a listener sees coalesced snapshots.
//   - Pub/Sub: the Pub/Sub emulator's push subscriptions really POST, and
//     redeliver with backoff when the endpoint fails. PushRelay turns each push
//     into a google.cloud.pubsub.topic.v1.messagePublished CloudEvent, as
//     Eventarc's Pub/Sub triggers do, and answers with the function's status,
//     so the emulator's own retry policy and dead-lettering apply.
package eventarc

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2"
	"github.com/cloudevents/sdk-go/v2/event"
	cehttp "github.com/cloudevents/sdk-go/v2/protocol/http"

	"github.com/egress-proxies/egress/internal/proxy"
)

// FirestoreWrittenType is the event type of the Firestore trigger.
const FirestoreWrittenType = "google.cloud.firestore.document.v1.written"

// Retry bounds a delivery's retries: exponential backoff from Initial to
// Max, for at most Attempts tries. Eventarc retries for up to 24 hours; a
// local stand-in gives up sooner and logs it, so a broken function is loud.
type Retry struct {
	Initial  time.Duration
	Max      time.Duration
	Attempts int
}

// DefaultRetry is what the local stack uses.
var DefaultRetry = Retry{Initial: 250 * time.Millisecond, Max: 10 * time.Second, Attempts: 30}

// Sender delivers one CloudEvent to one function URL.
type Sender struct {
	client cloudevents.Client
}

// NewSender returns a sender that posts binary-mode CloudEvents.
func NewSender() (*Sender, error) {
	c, err := cloudevents.NewClientHTTP()
	if err != nil {
		return nil, err
	}
	return &Sender{client: c}, nil
}

// Send posts e to url once and returns the function's HTTP status, or an
// error when it could not be reached.
func (s *Sender) Send(ctx context.Context, url string, e event.Event) (int, error) {
	ctx = cloudevents.ContextWithTarget(ctx, url)
	ctx = cehttp.WithCustomHeader(ctx, http.Header{})
	res := s.client.Send(ctx, e)
	var httpRes *cehttp.Result
	if cloudevents.ResultAs(res, &httpRes) {
		if httpRes.StatusCode >= 200 && httpRes.StatusCode < 300 {
			return httpRes.StatusCode, nil
		}
		return httpRes.StatusCode, fmt.Errorf("function at %s answered %d", url, httpRes.StatusCode)
	}
	if cloudevents.IsACK(res) {
		return http.StatusOK, nil
	}
	return 0, fmt.Errorf("delivering event %s to %s: %v", e.ID(), url, res)
}

// FirestoreRelay receives the Firestore emulator's trigger pushes and
// delivers them to Target as Eventarc would.
type FirestoreRelay struct {
	// Target is the URL of the function, e.g. http://127.0.0.1:8080/Reconcile.
	Target string
	Sender *Sender
	Retry  Retry
	Log    *slog.Logger

	wg sync.WaitGroup
	// ctx ends the retries when the stack shuts down.
	ctx context.Context
}

// NewFirestoreRelay returns a relay delivering to target until ctx ends.
func NewFirestoreRelay(ctx context.Context, target string, sender *Sender, log *slog.Logger) *FirestoreRelay {
	return &FirestoreRelay{Target: target, Sender: sender, Retry: DefaultRetry, Log: log, ctx: ctx}
}

// ServeHTTP takes one push. It answers at once and delivers in the
// background, because the emulator pushes one change at a time and would
// otherwise hold every later change behind a failing one; Eventarc gives no
// ordering either.
func (r *FirestoreRelay) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	e, err := MendFirestorePush(req)
	if err != nil {
		r.Log.Error("firestore push is malformed; dropped", "err", err)
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	w.WriteHeader(http.StatusNoContent)
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		deliver(r.ctx, r.Log, r.Retry, e, func(ctx context.Context) (int, error) { return r.Sender.Send(ctx, r.Target, e) })
	}()
}

// Wait blocks until every delivery has finished or given up.
func (r *FirestoreRelay) Wait() { r.wg.Wait() }

// deliver calls send until it succeeds, the attempts run out or ctx ends.
func deliver(ctx context.Context, log *slog.Logger, retry Retry, e event.Event, send func(context.Context) (int, error)) {
	backoff := retry.Initial
	for attempt := 1; ; attempt++ {
		status, err := send(ctx)
		if err == nil {
			return
		}
		if attempt >= retry.Attempts || ctx.Err() != nil {
			log.Error("event delivery abandoned", "event", e.ID(), "type", e.Type(), "subject", e.Subject(), "attempts", attempt, "status", status, "err", err)
			return
		}
		log.Warn("event delivery failed; retrying", "event", e.ID(), "subject", e.Subject(), "attempt", attempt, "status", status, "err", err)
		// Full jitter, as Google's retry guidance recommends, so that many
		// failed deliveries do not come back at once.
		wait := time.Duration(rand.Int64N(int64(backoff))) + backoff/2
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		backoff = min(2*backoff, retry.Max)
	}
}

// MendFirestorePush reads a Firestore emulator trigger push and returns the
// CloudEvent that Eventarc would deliver for the same change.
func MendFirestorePush(req *http.Request) (event.Event, error) {
	e := event.New()
	body, err := io.ReadAll(io.LimitReader(req.Body, 16<<20))
	if err != nil {
		return e, fmt.Errorf("reading push body: %w", err)
	}
	h := req.Header
	if t := h.Get("ce-type"); t != FirestoreWrittenType {
		return e, fmt.Errorf("push has type %q, want %q", t, FirestoreWrittenType)
	}
	// The emulator sends the base64 text of the protobuf; Eventarc sends the
	// bytes themselves.
	data, err := base64.StdEncoding.DecodeString(string(bytes.TrimSpace(body)))
	if err != nil {
		return e, fmt.Errorf("push body is not base64 protobuf: %w", err)
	}
	e.SetID(h.Get("ce-id"))
	e.SetType(FirestoreWrittenType)
	e.SetSubject(h.Get("ce-subject"))
	// ce-source comes as //firestore.googleapis.com/projects/projects/P/…
	e.SetSource(strings.Replace(h.Get("ce-source"), "/projects/projects/", "/projects/", 1))
	if ts, err := time.Parse(time.RFC3339Nano, h.Get("ce-time")); err == nil {
		e.SetTime(ts)
	} else {
		e.SetTime(time.Now())
	}
	if s := h.Get("ce-dataschema"); s != "" {
		e.SetDataSchema(s)
	}
	for _, ext := range []string{"location", "project", "database", "namespace", "document"} {
		if v := h.Get("ce-" + ext); v != "" {
			e.SetExtension(ext, v)
		}
	}
	if err := e.SetData("application/protobuf", data); err != nil {
		return e, err
	}
	if err := e.Validate(); err != nil {
		return e, fmt.Errorf("push does not make a valid CloudEvent: %w", err)
	}
	return e, nil
}

// TriggerPatterns are the document patterns Reconcile is triggered on, as
// deploy/terraform's Eventarc triggers match them: proxies, warm pools and
// pools' members. Each becomes a trigger of its own, with this suffix on
// its id.
var TriggerPatterns = []struct{ Suffix, Pattern string }{
	{"", proxy.DocumentPattern},
	{"-pools", proxy.PoolPattern},
	{"-members", proxy.MemberPattern},
}

// RegisterFirestoreTrigger registers, on the Firestore emulator at host, a
// trigger for each of TriggerPatterns that pushes every write of a
// matching document to the functions emulator address the emulator was
// started with. Triggers vanish when the emulator stops, so this runs at
// every start.
func RegisterFirestoreTrigger(ctx context.Context, host, project, triggerID string) error {
	for _, t := range TriggerPatterns {
		if err := registerFirestoreTrigger(ctx, host, project, triggerID+t.Suffix, t.Pattern); err != nil {
			return err
		}
	}
	return nil
}

func registerFirestoreTrigger(ctx context.Context, host, project, triggerID, pattern string) error {
	// "database" must be present: without it the emulator corrupts later
	// writes (EMULATORS.md).
	body, _ := json.Marshal(map[string]any{
		"eventType": FirestoreWrittenType,
		"database":  "(default)",
		"namespace": "(default)",
		"document":  map[string]string{"value": pattern, "matchType": "PATH_PATTERN"},
	})
	url := fmt.Sprintf("http://%s/emulator/v1/projects/%s/eventarcTrigger?eventarcTriggerId=%s", host, project, triggerID)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("registering Firestore trigger %s: %w", triggerID, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return fmt.Errorf("registering Firestore trigger %s: emulator answered %d: %s", triggerID, resp.StatusCode, msg)
	}
	return nil
}
