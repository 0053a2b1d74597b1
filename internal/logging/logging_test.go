package logging_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/logging"
)

func TestCloudLoggingShape(t *testing.T) {
	var buf bytes.Buffer
	log := logging.New(&buf, slog.LevelInfo)
	ctx := logging.WithTrace(context.Background(), logging.TraceFromHeader("demo", "abc123/456;o=1"))
	log.WarnContext(ctx, "status write refused", "document", "namespaces/a/proxies/b")
	log.Debug("not shown")

	var got map[string]any
	if err := json.Unmarshal(buf.Bytes(), &got); err != nil {
		t.Fatalf("log line %q is not one JSON object: %v", buf.String(), err)
	}
	delete(got, "time")
	want := map[string]any{
		"severity":                     "WARNING",
		"message":                      "status write refused",
		"document":                     "namespaces/a/proxies/b",
		"logging.googleapis.com/trace": "projects/demo/traces/abc123",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("log line (-want +got):\n%s", diff)
	}
}

func TestTraceFromHeader(t *testing.T) {
	cases := map[string]string{
		"":         "",
		"t1":       "projects/p/traces/t1",
		"t1/2":     "projects/p/traces/t1",
		"t1/2;o=1": "projects/p/traces/t1",
		"/2":       "",
	}
	for h, want := range cases {
		if got := logging.TraceFromHeader("p", h); got != want {
			t.Errorf("TraceFromHeader(%q) = %q, want %q", h, got, want)
		}
	}
}
