// Package logging makes the structured logger every function uses: log/slog
// writing one JSON object a line in the shape Cloud Logging reads from a
// Cloud Run container's output (severity, message, time, and the trace of the
// request when there is one), so that logs are filterable by field there and
// readable here.
package logging

import (
	"context"
	"io"
	"log/slog"
)

// New returns a JSON logger writing to w at the given minimum level.
func New(w io.Writer, level slog.Leveler) *slog.Logger {
	return slog.New(&traceHandler{slog.NewJSONHandler(w, &slog.HandlerOptions{
		Level:       level,
		ReplaceAttr: cloudLoggingKeys,
	})})
}

// cloudLoggingKeys renames slog's keys to Cloud Logging's special fields.
func cloudLoggingKeys(groups []string, a slog.Attr) slog.Attr {
	if len(groups) > 0 {
		return a
	}
	switch a.Key {
	case slog.MessageKey:
		a.Key = "message"
	case slog.LevelKey:
		a.Key = "severity"
		lvl, _ := a.Value.Any().(slog.Level)
		a.Value = slog.StringValue(severity(lvl))
	}
	return a
}

func severity(l slog.Level) string {
	switch {
	case l >= slog.LevelError:
		return "ERROR"
	case l >= slog.LevelWarn:
		return "WARNING"
	case l >= slog.LevelInfo:
		return "INFO"
	default:
		return "DEBUG"
	}
}

type traceKey struct{}

// WithTrace returns a context whose log lines carry the trace, the value for
// Cloud Logging's logging.googleapis.com/trace field
// ("projects/P/traces/T"), so that a request's lines group together.
func WithTrace(ctx context.Context, trace string) context.Context {
	if trace == "" {
		return ctx
	}
	return context.WithValue(ctx, traceKey{}, trace)
}

// TraceFromHeader turns an X-Cloud-Trace-Context header ("TRACE/SPAN;o=1")
// into the trace field's value for project, or "" if there is none.
func TraceFromHeader(project, header string) string {
	if header == "" || project == "" {
		return ""
	}
	trace := header
	for i := 0; i < len(header); i++ {
		if header[i] == '/' || header[i] == ';' {
			trace = header[:i]
			break
		}
	}
	if trace == "" {
		return ""
	}
	return "projects/" + project + "/traces/" + trace
}

// traceHandler adds the context's trace to each record.
type traceHandler struct{ slog.Handler }

func (h *traceHandler) Handle(ctx context.Context, r slog.Record) error {
	if trace, ok := ctx.Value(traceKey{}).(string); ok {
		r.AddAttrs(slog.String("logging.googleapis.com/trace", trace))
	}
	return h.Handler.Handle(ctx, r)
}

func (h *traceHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &traceHandler{h.Handler.WithAttrs(attrs)}
}

func (h *traceHandler) WithGroup(name string) slog.Handler {
	return &traceHandler{h.Handler.WithGroup(name)}
}
