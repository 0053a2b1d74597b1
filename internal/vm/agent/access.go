package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/egress-proxies/egress/internal/vm/vmconfig"
)

// accessPage is the engine's answer to GET /access?after=SEQ on its stats
// listener, read tolerantly: the lines stay as the engine wrote them, and
// the control plane keeps of each only the fields of the contract.
type accessPage struct {
	Next    int64             `json:"next"`
	Dropped int64             `json:"dropped"`
	Lines   []json.RawMessage `json:"lines"`
}

// ShipAccess ships the engine's access lines every interval until ctx
// ends: it reads the lines after the last it shipped from the engine's
// stats listener and publishes them on the call-home topic, one
// AccessBatch, with the VM's identity, as the call-home is. Reconcile
// writes them to Cloud Logging under the proxy the VM serves: the VM holds
// no log writer. A proxy without the access log (the engine answers 404),
// and a warm pool's VM, which serves no one, ship nothing; a line is
// dropped only by the engine, when no one read it in time, and the next
// batch says how many.
func (a *Agent) ShipAccess(ctx context.Context, interval time.Duration) {
	var after int64
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		next, err := a.shipAccess(ctx, after)
		if err != nil {
			a.Log.Warn("access lines not shipped; the next round tries again", slog.Any("error", err))
			continue
		}
		after = next
	}
}

// shipAccess ships the lines after seq, and returns the seq to ask after
// next. The engine's Dropped is its count for this answer (the lines after
// seq it let go), so a batch carries it as it is.
func (a *Agent) shipAccess(ctx context.Context, seq int64) (int64, error) {
	attr := func(k string) string { v, _ := a.Metadata.Attr(ctx, k); return v }
	if attr(vmconfig.KeyPool) != "" {
		return seq, nil
	}
	raw, err := os.ReadFile(filepath.Join(a.Dir, ConfigFile))
	if err != nil {
		return seq, nil // nothing served yet
	}
	var cfg vmconfig.Config
	if err := json.Unmarshal(raw, &cfg); err != nil || cfg.StatsListen == "" {
		return seq, nil
	}
	c := a.HTTP
	if c == nil {
		c = http.DefaultClient
	}
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodGet, "http://"+cfg.StatsListen+"/access?after="+strconv.FormatInt(seq, 10), nil)
	if err != nil {
		return seq, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return seq, fmt.Errorf("reading the engine's access lines: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound {
		return seq, nil // the proxy keeps no access log
	}
	if resp.StatusCode != http.StatusOK {
		return seq, fmt.Errorf("reading the engine's access lines: %s", resp.Status)
	}
	var page accessPage
	if err := json.NewDecoder(resp.Body).Decode(&page); err != nil {
		return seq, fmt.Errorf("reading the engine's access lines: %w", err)
	}
	if len(page.Lines) == 0 && page.Dropped == 0 {
		return page.Next, nil
	}
	// One page is one message: the engine bounds a page's lines, and the
	// rest are the next round's.
	next := page.Next
	topic := attr(vmconfig.KeyCallHomeTopic)
	endpoint := attr(vmconfig.KeyPubSubEndpoint)
	if endpoint == "" {
		endpoint = vmconfig.DefaultPubSubEndpoint
	}
	b := vmconfig.AccessBatch{Namespace: attr(vmconfig.KeyNamespace), Name: attr(vmconfig.KeyName), UID: attr(vmconfig.KeyUID),
		Dropped: page.Dropped, Lines: page.Lines}
	if !topicPattern.MatchString(topic) || !endpointPattern.MatchString(endpoint) || !labelPattern.MatchString(b.Namespace) ||
		!labelPattern.MatchString(b.Name) || !uidPattern.MatchString(b.UID) {
		return seq, fmt.Errorf("the call-home attributes are not valid")
	}
	data, err := json.Marshal(b)
	if err != nil {
		return seq, err
	}
	if err := a.publish(ctx, endpoint, topic, data, map[string]string{vmconfig.KindAttribute: vmconfig.KindAccess}); err != nil {
		return seq, fmt.Errorf("publishing %d access lines: %w", len(b.Lines), err)
	}
	return next, nil
}
