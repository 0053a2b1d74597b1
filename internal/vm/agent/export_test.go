package agent

import "time"

// NextWait is w's wait after outcome, the one before being wait.
func NextWait(w *UserDataWatch, outcome Outcome, wait time.Duration) time.Duration {
	return w.next(outcome, wait)
}
