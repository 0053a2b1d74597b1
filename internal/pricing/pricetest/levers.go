package pricetest

import "sync"

// Levers are what a test moves on a price API's fake: an answer planted
// verbatim (SetBody: a wrong field, which the price source must refuse),
// a failure of every request (Fail), and the count of answers (Calls).
// A fake embeds them; its ServeHTTP asks Failing first, and Answered when
// it answers. Safe for concurrent use.
type Levers struct {
	mu     sync.Mutex
	body   string
	status int
	calls  int
}

// SetBody answers the next requests with body verbatim; "" restores the
// fake's own answers.
func (l *Levers) SetBody(body string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.body = body
}

// Fail answers every request with status; 0 stops it.
func (l *Levers) Fail(status int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.status = status
}

// Calls counts the requests answered (Answered).
func (l *Levers) Calls() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.calls
}

// Failing is the status Fail set, 0 for none.
func (l *Levers) Failing() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.status
}

// Answered counts an answer, and returns the body SetBody planted, ""
// when the fake answers its own.
func (l *Levers) Answered() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls++
	return l.body
}
