package sim

import (
	"context"
	"fmt"
	"os"
)

func (w *World) trace(ctx context.Context, format string, args ...any) {
	if os.Getenv("SIM_TRACE") == "" {
		return
	}
	in, _ := ctx.Value(invKey{}).(*inv)
	id := 0
	if in != nil {
		id = in.id
	}
	fmt.Fprintf(os.Stderr, "%s inv %d: %s\n", w.clock.Now().Format("15:04:05.000"), id, fmt.Sprintf(format, args...))
}
