package engine

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/egress-proxies/egress/internal/vm/vmconfig"
)

// The month's traffic is what spec.trafficQuota bounds: the bytes carried
// both ways (the server's bytesIn and bytesOut) since 00:00 UTC on the
// first, by this engine and the engines before it on the VM. A restart
// must not give a proxy a fresh month, so the count is written to a file
// of the engine's (Options.TrafficState) every trafficSaveEvery and when
// the engine stops, and read back when it starts: a crash loses at most
// trafficSaveEvery of counting. A reload keeps the process, and with it
// the count.

// trafficSaveEvery is how often the month's count is written while it
// grows.
const trafficSaveEvery = 10 * time.Second

// monthly counts the month's bytes from the server's running total.
type monthly struct {
	mu  sync.Mutex
	now func() time.Time
	// month is the month counted ("2006-01", UTC); base the server's total
	// when it began in this process, before the bytes of it that engines
	// before this one carried.
	month        string
	base, before int64
	// path keeps the count across restarts; "" keeps it in memory only.
	path string
	// saved is the count last written for month.
	saved int64
}

// monthState is the file at monthly.path.
type monthState struct {
	Month string `json:"month"`
	Bytes int64  `json:"bytes"`
}

func monthOf(t time.Time) string { return t.UTC().Format("2006-01") }

// load starts counting at the server's total now, with the bytes the file
// says were carried this month before; a file of another month counts
// nothing, and no file is a VM's first start.
func (m *monthly) load(total int64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.month, m.base, m.before = monthOf(m.now()), total, 0
	if m.path == "" {
		return nil
	}
	b, err := os.ReadFile(m.path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("engine: reading the month's traffic: %w", err)
	}
	var st monthState
	if err := json.Unmarshal(b, &st); err != nil || st.Bytes < 0 {
		// A torn or foreign file: counting from zero would give the
		// proxy its quota again, so the engine says so and starts.
		return fmt.Errorf("engine: the month's traffic in %s is not {\"month\",\"bytes\"}: %q", m.path, b)
	}
	if st.Month == m.month {
		m.before, m.saved = st.Bytes, st.Bytes
	}
	return nil
}

// carry makes the month's count at least c's bytes when c is of the month
// counted: the bytes a VM before this one carried.
func (m *monthly) carry(total int64, c *vmconfig.MonthCount) {
	if c == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if month, used := m.turn(total); c.Month == month && c.Bytes > used {
		m.before += c.Bytes - used
	}
}

// used is the month counted and its bytes, given the server's total now;
// a new month starts at zero.
func (m *monthly) used(total int64) (string, int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.turn(total)
}

func (m *monthly) turn(total int64) (string, int64) {
	if mo := monthOf(m.now()); mo != m.month {
		m.month, m.base, m.before, m.saved = mo, total, 0, 0
	}
	return m.month, m.before + total - m.base
}

// save writes the month's count when it changed since the last write:
// to a new file renamed over the old, so a crash leaves one or the other.
func (m *monthly) save(total int64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	month, used := m.turn(total)
	if m.path == "" || (used == m.saved && fileExists(m.path)) {
		return nil
	}
	b, _ := json.Marshal(monthState{Month: month, Bytes: used})
	tmp := m.path + ".new"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return fmt.Errorf("engine: writing the month's traffic: %w", err)
	}
	if err := os.Rename(tmp, filepath.Clean(m.path)); err != nil {
		return fmt.Errorf("engine: writing the month's traffic: %w", err)
	}
	m.saved = used
	return nil
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// total is every byte the server carried, both ways.
func (s *Server) total() int64 { return s.bytesIn.Load() + s.bytesOut.Load() }

// quotaSpent reports whether the month's bytes reached r's quota: a new
// connection or request is then refused (ansQuotaExceeded).
func (s *Server) quotaSpent(r *rules) bool {
	if r.trafficQuota == 0 {
		return false
	}
	_, used := s.month.used(s.total())
	return used >= r.trafficQuota
}

// keepMonth writes the month's count every trafficSaveEvery until the
// server stops, and once more then.
func (s *Server) keepMonth() {
	t := time.NewTicker(trafficSaveEvery)
	defer t.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-t.C:
			if err := s.month.save(s.total()); err != nil {
				s.log.Warn("the month's traffic not kept", slog.Any("error", err))
			}
		}
	}
}
