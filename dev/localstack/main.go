// Command localstack runs the whole product on one machine, in the
// foreground: Google's Firestore and Pub/Sub emulators, the topics and push
// subscriptions, the Eventarc and Cloud Scheduler stand-ins of package
// eventarc, and the three functions in one process with the mock provider.
// `make run` runs it; Ctrl-C stops everything, emulators included.
//
// The API is served at the root path as production serves it
// (FUNCTION_TARGET=ProxyAPI answers every path there), the event functions
// at /Reconcile and /CollectGarbage as the functions framework serves each
// registered function when no target is set, and the mock provider's VMs at
// /debug/instances, which exists only here: GET lists the VMs and static
// addresses, DELETE /debug/instances?id=ID loses a VM as a hand in the console
// would. Also only here, for the benchmark and for a developer's profile:
// the process's profiles at /debug/pprof/ (go tool pprof
// http://localhost:8080/debug/pprof/profile), and POST /debug/memory, which
// collects the garbage and returns the free memory to the system, so that
// what a phase adds to the resident size is what the phase holds.
//
// Its configuration is the functions' own (internal/app's table of
// variables, documented in docs/reference/configuration.md), with the local stack's defaults
// underneath: the demo-egress project, text logs, the emulators on their
// usual ports, and a caller for requests that bring no identity
// (LOCAL_IDENTITY, local-admin@localhost, an admin by API_ADMINS' local
// default), which the ready line names.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"slices"
	"syscall"
	"time"

	"cloud.google.com/go/pubsub/v2"
	"github.com/GoogleCloudPlatform/functions-framework-go/funcframework"
	cloudevents "github.com/cloudevents/sdk-go/v2/event"

	"github.com/egress-proxies/egress/emulators/emulator"
	"github.com/egress-proxies/egress/emulators/eventarc"
	"github.com/egress-proxies/egress/internal/app"
	"github.com/egress-proxies/egress/internal/clouds"
	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/provider/mock"
	"github.com/egress-proxies/egress/internal/provider/plugin"
	"github.com/egress-proxies/egress/internal/queue"
)

// firestoreTrigger is the id of the emulator trigger that stands in for the
// Eventarc Firestore trigger of deploy/terraform.
const firestoreTrigger = "reconcile-on-write"

func main() {
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, log); err != nil {
		log.Error("local stack failed", "err", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, log *slog.Logger) error {
	// The production clouds, and the mock, which this binary links and
	// the deployed functions do not.
	cl := append(slices.Clone(clouds.All), mock.Plugin)
	getenv := app.LocalGetenv(os.Getenv, cl)
	cfg, err := app.Load(getenv, cl, app.LocalStack)
	if err != nil {
		return err
	}
	s := cfg.Local
	// The Google clients find the emulators through these.
	os.Setenv(emulator.Firestore.EnvVar(), s.FirestoreHost)
	os.Setenv(emulator.PubSub.EnvVar(), s.PubSubHost)

	// The relay listens first: the Firestore emulator must be told at start
	// where to push.
	relayLis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("relay listener: %w", err)
	}
	relayHost := relayLis.Addr().String()

	var procs []*emulator.Process
	defer func() {
		for _, p := range procs {
			p.Stop()
		}
		log.Info("emulators stopped")
	}()
	for _, e := range []struct {
		kind emulator.Kind
		host string
		args []string
	}{
		{emulator.Firestore, s.FirestoreHost, []string{"--functions_emulator=" + relayHost}},
		{emulator.PubSub, s.PubSubHost, nil},
	} {
		p, err := emulator.Start(ctx, e.kind, emulator.Options{Host: e.host, Args: e.args})
		if err != nil {
			return fmt.Errorf("starting the %s emulator on %s: %w", e.kind, e.host, err)
		}
		procs = append(procs, p)
		log.Info("emulator ready", "emulator", e.kind, e.kind.EnvVar(), p.Host)
	}

	functionsURL := "http://127.0.0.1:" + s.Port
	sender, err := eventarc.NewSender()
	if err != nil {
		return err
	}
	fsRelay := eventarc.NewFirestoreRelay(ctx, functionsURL+"/Reconcile", sender, log)
	mux := http.NewServeMux()
	mux.Handle("/functions/", fsRelay)
	mux.Handle("/push/", &eventarc.PushRelay{Project: cfg.Project, Functions: functionsURL, Sender: sender, Log: log})
	relay := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go relay.Serve(relayLis)
	defer relay.Close()

	if err := eventarc.RegisterFirestoreTrigger(ctx, s.FirestoreHost, cfg.Project, firestoreTrigger); err != nil {
		return err
	}
	ps, err := pubsub.NewClient(ctx, cfg.Project)
	if err != nil {
		return fmt.Errorf("pubsub client: %w", err)
	}
	defer ps.Close()
	if err := eventarc.SetupPubSub(ctx, ps, cfg.Project, "http://"+relayHost, []eventarc.PushTrigger{
		{Topic: queue.ReconcileTopic, Function: "Reconcile"},
		{Topic: queue.CallHomeTopic, Function: "Reconcile"},
		{Topic: queue.GCTopic, Function: "CollectGarbage"},
	}); err != nil {
		return err
	}

	a, err := app.New(ctx, getenv, app.Options{Linked: []plugin.Plugin{mock.Plugin}})
	if err != nil {
		return err
	}
	defer a.Close()
	if err := register(ctx, a); err != nil {
		return err
	}
	serveErr := make(chan error, 1)
	go func() { serveErr <- funcframework.StartHostPort("127.0.0.1", s.Port) }()
	if err := waitHealthy(ctx, functionsURL+"/healthz", serveErr); err != nil {
		return err
	}

	gcPub := ps.Publisher(queue.GCTopic)
	defer gcPub.Stop()
	go (&eventarc.Scheduler{Publisher: gcPub, Interval: s.GCInterval, Log: log}).Run(ctx)

	who := "no one: requests without an identity are refused"
	if id := cfg.API.LocalIdentity; id != "" {
		who = id
	}
	fmt.Fprintf(os.Stderr, "\negress local stack ready: API at http://localhost:%s, a request without an identity acts as %s (Ctrl-C stops it and the emulators)\n"+
		"  curl -sS -X PUT localhost:%s/v1/namespaces/demo -H 'Content-Type: application/json' -d '{\"members\":{\"%s\":\"owner\"}}'\n"+
		"  curl -sS -X POST localhost:%s/v1/namespaces/demo/proxies -H 'Content-Type: application/json' "+
		"-d '{\"name\":\"my-proxy\",\"spec\":{\"placement\":{\"region\":\"us-central1\",\"zone\":\"us-central1-a\"},\"allowedSourceRanges\":[\"203.0.113.0/24\"]}}'\n\n",
		s.Port, who, s.Port, cfg.API.LocalIdentity, s.Port)

	select {
	case <-ctx.Done():
		log.Info("shutting down")
		return nil
	case err := <-serveErr:
		return fmt.Errorf("functions server: %w", err)
	}
}

// register serves the App's three functions at /NAME, as the functions
// framework serves each registered function when no target is set; the API
// at the root path too, as a deployed ProxyAPI answers every path of its
// own URL; and the read-only view of the mock provider's VMs, which exists
// only here. Each function serves at most as many requests at once as its
// deployment does (app.Deployed); the others wait their turn, as they
// queue for a deployed function's instances.
func register(ctx context.Context, a *app.App) error {
	api := capped(app.Deployed[app.ProxyAPI].InFlight())
	for path, h := range map[string]http.HandlerFunc{
		"/":                    api.http(a.ProxyAPI().ServeHTTP),
		"/ProxyAPI":            api.http(a.ProxyAPI().ServeHTTP),
		"/debug/instances":     debugInstances(a).ServeHTTP,
		"/debug/pprof/":        pprof.Index,
		"/debug/pprof/profile": pprof.Profile,
		"/debug/memory":        freeMemory,
	} {
		if err := funcframework.RegisterHTTPFunctionContext(ctx, path, h); err != nil {
			return err
		}
	}
	for path, fn := range map[string]func(context.Context, cloudevents.Event) error{
		"/Reconcile":      capped(app.Deployed[app.Reconcile].InFlight()).event(a.Reconcile),
		"/CollectGarbage": capped(app.Deployed[app.CollectGarbage].InFlight()).event(a.CollectGarbage),
	} {
		if err := funcframework.RegisterCloudEventFunctionContext(ctx, path, fn); err != nil {
			return err
		}
	}
	return nil
}

// slots are a function's places for requests served at once.
type slots chan struct{}

func capped(n int) slots { return make(slots, n) }

func (s slots) http(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		select {
		case s <- struct{}{}:
		case <-r.Context().Done():
			return
		}
		defer func() { <-s }()
		h(w, r)
	}
}

func (s slots) event(fn func(context.Context, cloudevents.Event) error) func(context.Context, cloudevents.Event) error {
	return func(ctx context.Context, e cloudevents.Event) error {
		select {
		case s <- struct{}{}:
		case <-ctx.Done():
			return ctx.Err()
		}
		defer func() { <-s }()
		return fn(ctx, e)
	}
}

// debugInstances serves the mock provider's VMs and static addresses at
// GET /debug/instances, and DELETE /debug/instances?id=ID makes a VM vanish
// without the product's knowledge, as a VM deleted by hand in the console
// does: what the end-to-end test needs to watch a replacement from outside.
func debugInstances(a *app.App) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, err := a.Providers.Get(r.Context(), mock.Type)
		if err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		// The composition root hands out providers in decorators.
		m, ok := provider.Unwrap(p).(*mock.Provider)
		if !ok {
			http.Error(w, "the mock provider is not in use", http.StatusNotFound)
			return
		}
		switch r.Method {
		case http.MethodGet:
			writeInstances(w, m.Instances(), m.Addresses())
		case http.MethodDelete:
			// A query parameter, not a path: an ID is a URL of its own
			// (mock://NAME), which a path would not carry intact.
			id := r.URL.Query().Get("id")
			if !m.Lose(id) {
				http.Error(w, fmt.Sprintf("no instance %q", id), http.StatusNotFound)
				return
			}
			w.WriteHeader(http.StatusNoContent)
		default:
			w.Header().Set("Allow", "GET, DELETE")
			http.Error(w, "GET /debug/instances or DELETE /debug/instances?id=ID", http.StatusMethodNotAllowed)
		}
	})
}

// freeMemory, on POST, collects the garbage and returns the free memory to
// the system, and answers the resident size it leaves.
func freeMemory(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		http.Error(w, "POST /debug/memory", http.StatusMethodNotAllowed)
		return
	}
	debug.FreeOSMemory()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]uint64{"heapInuseBytes": m.HeapInuse, "heapReleasedBytes": m.HeapReleased})
}

// instanceView is provider.Instance as /debug/instances shows it.
type instanceView struct {
	ID        string    `json:"id"`
	IP        string    `json:"ip"`
	State     string    `json:"state"`
	UID       string    `json:"uid"`
	CreatedAt time.Time `json:"createdAt"`
}

func views(list []provider.Instance) []instanceView {
	out := []instanceView{}
	for _, in := range list {
		out = append(out, instanceView{ID: in.ID, IP: in.IP, State: string(in.State), UID: in.UID, CreatedAt: in.CreatedAt})
	}
	return out
}

func writeInstances(w http.ResponseWriter, instances, addresses []provider.Instance) {
	out := struct {
		Instances []instanceView `json:"instances"`
		// Addresses are the static addresses, used (Running) or not
		// (Terminated).
		Addresses []instanceView `json:"addresses"`
	}{Instances: views(instances), Addresses: views(addresses)}
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(out)
}

// waitHealthy polls the API's health check until it answers 200.
func waitHealthy(ctx context.Context, url string, serveErr <-chan error) error {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if resp, err := http.Get(url); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case err := <-serveErr:
			return fmt.Errorf("functions server: %w", err)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return fmt.Errorf("the functions did not answer %s within 30s", url)
}
