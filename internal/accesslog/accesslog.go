// Package accesslog writes the proxies' access lines (internal/callhome)
// where operators read them: in production, Cloud Logging's log
// egress-proxy-access of the project, one entry per line, on the VM's
// monitored resource (gce_instance), labelled with the proxy's uid,
// namespace and name; locally, the local stack's own log.
//
// Reconcile writes them through the Logging API (entries.write), with its
// own account: the VMs hold no log writer (docs/concepts/security.md).
// The log is not the functions' standard output, so no line a VM sends
// can feed a log-based metric or an alert, which read only that.
package accesslog

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"time"

	logging "google.golang.org/api/logging/v2"
	"google.golang.org/api/option"

	"github.com/egress-proxies/egress/internal/callhome"
	"github.com/egress-proxies/egress/internal/vm/vmconfig"
)

// LogID is the log the lines go to.
const LogID = "egress-proxy-access"

// CloudLogging writes to Cloud Logging. It makes its client on the first
// write, as the app's other clients do, and tries again after a failure.
type CloudLogging struct {
	project string
	opts    []option.ClientOption

	mu  sync.Mutex
	svc *logging.Service
}

// NewCloudLogging returns the sink of project's log LogID; opts reach the
// Logging API's client (an endpoint, in tests).
func NewCloudLogging(project string, opts ...option.ClientOption) *CloudLogging {
	return &CloudLogging{project: project, opts: opts}
}

func (c *CloudLogging) service(ctx context.Context) (*logging.Service, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.svc == nil {
		svc, err := logging.NewService(context.WithoutCancel(ctx), c.opts...)
		if err != nil {
			return nil, fmt.Errorf("cloud logging client: %w", err)
		}
		c.svc = svc
	}
	return c.svc, nil
}

// Write writes the lines in one entries.write.
func (c *CloudLogging) Write(ctx context.Context, l callhome.Labels, lines []vmconfig.AccessLine) error {
	svc, err := c.service(ctx)
	if err != nil {
		return err
	}
	req := &logging.WriteLogEntriesRequest{
		LogName: "projects/" + c.project + "/logs/" + LogID,
		Resource: &logging.MonitoredResource{Type: "gce_instance", Labels: map[string]string{
			"project_id": l.Instance.Project, "zone": l.Instance.Zone, "instance_id": l.Instance.ID,
		}},
		Labels: labels(l),
	}
	for _, line := range lines {
		payload, err := json.Marshal(line)
		if err != nil {
			return err
		}
		req.Entries = append(req.Entries, &logging.LogEntry{
			JsonPayload: payload,
			Timestamp:   line.Time.UTC().Format(time.RFC3339Nano),
			Severity:    "INFO",
		})
	}
	if _, err := svc.Entries.Write(req).Context(ctx).Do(); err != nil {
		return fmt.Errorf("writing %d access lines of %s/%s to %s: %w", len(lines), l.Namespace, l.Name, LogID, err)
	}
	return nil
}

func labels(l callhome.Labels) map[string]string {
	return map[string]string{"uid": l.UID, "namespace": l.Namespace, "name": l.Name, "instance": l.Instance.Name}
}

// Local writes each line to a logger, as the local stack's own log: one
// line "proxy access" with the labels and the line's fields.
type Local struct{ Log *slog.Logger }

// Write logs the lines.
func (s Local) Write(ctx context.Context, l callhome.Labels, lines []vmconfig.AccessLine) error {
	for _, line := range lines {
		s.Log.InfoContext(ctx, "proxy access", slog.String("log", LogID), slog.Any("labels", labels(l)), slog.Any("line", line))
	}
	return nil
}
