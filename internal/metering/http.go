package metering

import (
	"log/slog"
	"net/http"

	"github.com/felixge/httpsnoop"
)

// HTTP meters every request h serves as an invocation of function, with the
// method and the response status on its line.
func HTTP(function string, log *slog.Logger, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, inv := Start(r.Context(), function)
		m := httpsnoop.CaptureMetrics(h, w, r.WithContext(ctx))
		outcome := OK
		if m.Code >= 500 {
			outcome = Failed
		}
		inv.End(ctx, log, outcome, slog.String("method", r.Method), slog.Int("status", m.Code))
	})
}
