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
// GET /debug/instances, which exists only here.
//
// Configuration, all optional (durations in Go's syntax, 2s or 10m):
//
//	PORT                     the functions' port (8080)
//	GOOGLE_CLOUD_PROJECT     the project (demo-egress; demo- ids never reach Google)
//	FIRESTORE_EMULATOR_HOST  where to start the Firestore emulator (127.0.0.1:8081)
//	PUBSUB_EMULATOR_HOST     where to start the Pub/Sub emulator (127.0.0.1:8085)
//	GC_INTERVAL              how often the Scheduler stand-in fires (1m)
//	GC_GRACE_PERIOD, GC_*    CollectGarbage's settings (internal/app)
//	MOCK_PROVISIONING_DELAY  how long mock VMs take to boot (5s)
//	LOG_LEVEL, LOG_FORMAT    the functions' logs (info, text)
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"cloud.google.com/go/pubsub/v2"
	"github.com/GoogleCloudPlatform/functions-framework-go/funcframework"

	"github.com/egress-proxies/egress/emulators/eventarc"
	_ "github.com/egress-proxies/egress/functions"
	"github.com/egress-proxies/egress/internal/app"
	"github.com/egress-proxies/egress/internal/emulator"
	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/provider/mock"
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

// settings are the stack's own variables, with their defaults filled in.
type settings struct {
	port, project, firestoreHost, pubsubHost string
	gcInterval                               time.Duration
}

func load() (settings, error) {
	s := settings{
		port:          envOr("PORT", "8080"),
		project:       envOr("GOOGLE_CLOUD_PROJECT", "demo-egress"),
		firestoreHost: envOr(emulator.Firestore.EnvVar(), "127.0.0.1:8081"),
		pubsubHost:    envOr(emulator.PubSub.EnvVar(), "127.0.0.1:8085"),
	}
	var err error
	if s.gcInterval, err = app.Duration(os.Getenv, "GC_INTERVAL", time.Minute); err != nil {
		return s, err
	}
	if s.gcInterval <= 0 {
		return s, errors.New("config: GC_INTERVAL must be longer than zero")
	}
	return s, nil
}

func run(ctx context.Context, log *slog.Logger) error {
	s, err := load()
	if err != nil {
		return err
	}
	// The functions read their configuration from the environment, as in
	// production; these are the local stack's answers.
	for k, v := range map[string]string{
		"GOOGLE_CLOUD_PROJECT":      s.project,
		emulator.Firestore.EnvVar(): s.firestoreHost,
		emulator.PubSub.EnvVar():    s.pubsubHost,
		"LOG_FORMAT":                envOr("LOG_FORMAT", "text"),
	} {
		os.Setenv(k, v)
	}

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
		{emulator.Firestore, s.firestoreHost, []string{"--functions_emulator=" + relayHost}},
		{emulator.PubSub, s.pubsubHost, nil},
	} {
		p, err := emulator.Start(ctx, e.kind, emulator.Options{Host: e.host, Args: e.args})
		if err != nil {
			return fmt.Errorf("starting the %s emulator on %s: %w", e.kind, e.host, err)
		}
		procs = append(procs, p)
		log.Info("emulator ready", "emulator", e.kind, e.kind.EnvVar(), p.Host)
	}

	functionsURL := "http://127.0.0.1:" + s.port
	sender, err := eventarc.NewSender()
	if err != nil {
		return err
	}
	fsRelay := eventarc.NewFirestoreRelay(ctx, functionsURL+"/Reconcile", sender, log)
	mux := http.NewServeMux()
	mux.Handle("/functions/", fsRelay)
	mux.Handle("/push/", &eventarc.PushRelay{Project: s.project, Functions: functionsURL, Sender: sender, Log: log})
	relay := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go relay.Serve(relayLis)
	defer relay.Close()

	if err := eventarc.RegisterFirestoreTrigger(ctx, s.firestoreHost, s.project, firestoreTrigger); err != nil {
		return err
	}
	ps, err := pubsub.NewClient(ctx, s.project)
	if err != nil {
		return fmt.Errorf("pubsub client: %w", err)
	}
	defer ps.Close()
	if err := eventarc.SetupPubSub(ctx, ps, s.project, "http://"+relayHost, []eventarc.PushTrigger{
		{Topic: queue.ReconcileTopic, Function: "Reconcile"},
		{Topic: queue.GCTopic, Function: "CollectGarbage"},
	}); err != nil {
		return err
	}

	rt, err := app.Process()
	if err != nil {
		return err
	}
	if err := registerLocalRoutes(ctx, rt); err != nil {
		return err
	}
	serveErr := make(chan error, 1)
	go func() { serveErr <- funcframework.StartHostPort("127.0.0.1", s.port) }()
	if err := waitHealthy(ctx, functionsURL+"/healthz", serveErr); err != nil {
		return err
	}

	gcPub := ps.Publisher(queue.GCTopic)
	defer gcPub.Stop()
	go (&eventarc.Scheduler{Publisher: gcPub, Interval: s.gcInterval, Log: log}).Run(ctx)

	fmt.Fprintf(os.Stderr, "\negress local stack ready: API at http://localhost:%s (Ctrl-C stops it and the emulators)\n"+
		"  curl -sS -X POST localhost:%s/v1/namespaces/demo/proxies -H 'Content-Type: application/json' "+
		"-d '{\"name\":\"my-proxy\",\"spec\":{\"placement\":{\"region\":\"us-central1\",\"zone\":\"us-central1-a\"},\"allowedSourceRanges\":[\"203.0.113.0/24\"]}}'\n\n",
		s.port, s.port)

	select {
	case <-ctx.Done():
		log.Info("shutting down")
		return nil
	case err := <-serveErr:
		return fmt.Errorf("functions server: %w", err)
	}
}

// registerLocalRoutes adds what production serves differently or not at
// all: the API at the root path (a deployed ProxyAPI answers every path of
// its own URL) and the read-only view of the mock provider's VMs.
func registerLocalRoutes(ctx context.Context, rt *app.Runtime) error {
	api, err := app.NewProxyAPI(rt)
	if err != nil {
		return err
	}
	if err := funcframework.RegisterHTTPFunctionContext(ctx, "/", api.ServeHTTP); err != nil {
		return err
	}
	return funcframework.RegisterHTTPFunctionContext(ctx, "/debug/instances", func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			w.Header().Set("Allow", http.MethodGet)
			http.Error(w, "only GET", http.StatusMethodNotAllowed)
			return
		}
		p, err := rt.Providers.Get(r.Context(), mock.Type)
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
		writeInstances(w, m.Instances())
	})
}

// instanceView is provider.Instance as /debug/instances shows it.
type instanceView struct {
	ID        string    `json:"id"`
	IP        string    `json:"ip"`
	State     string    `json:"state"`
	UID       string    `json:"uid"`
	CreatedAt time.Time `json:"createdAt"`
}

func writeInstances(w http.ResponseWriter, list []provider.Instance) {
	out := struct {
		Instances []instanceView `json:"instances"`
	}{Instances: []instanceView{}}
	for _, in := range list {
		out.Instances = append(out.Instances, instanceView{ID: in.ID, IP: in.IP, State: string(in.State), UID: in.UID, CreatedAt: in.CreatedAt})
	}
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

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}
