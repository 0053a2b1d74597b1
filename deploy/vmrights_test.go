package deploy_test

import (
	"strings"
	"testing"
)

// TestVMsWriteNoLogsOrMetrics: root on one proxy VM holds its account's
// token, so whatever that account may write, a compromised VM may forge.
// The account holds no role that writes a log entry or a metric (no
// logging or monitoring role, no basic role), its token's scopes name
// neither service, and the log-based metrics and the alerts read only what
// Cloud Run took from the functions' standard output, which no account can
// write through the Logging API.
func TestVMsWriteNoLogsOrMetrics(t *testing.T) {
	ev := evaluate(t, parseModule(t), nil)
	member := ev.ctx.Variables["google_service_account"].GetAttr("proxy_vm").GetAttr("member").AsString()
	roles := customRoles(t, ev)
	for _, g := range bindings(t, ev)[member] {
		for _, bad := range []string{"roles/logging.", "roles/monitoring.", "roles/editor", "roles/owner", "roles/viewer"} {
			if strings.HasPrefix(g.role, bad) {
				t.Errorf("proxy-vm holds %s on %s: a VM could write the platform's logs or metrics", g.role, g.on)
			}
		}
		for _, p := range roles[g.role] {
			if strings.HasPrefix(p, "logging.") || strings.HasPrefix(p, "monitoring.") {
				t.Errorf("proxy-vm's role %s holds %s", g.role, p)
			}
		}
	}
	scopes := stringList(t, "var.proxy_vm_scopes", ev.ctx.Variables["var"].GetAttr("proxy_vm_scopes"))
	for _, s := range scopes {
		if strings.Contains(s, "logging") || strings.Contains(s, "monitoring") || strings.HasSuffix(s, "/cloud-platform") {
			t.Errorf("the VMs' token has scope %s", s)
		}
	}
	logs := ev.local(t, "function_logs").AsString()
	if want := `logName="projects/demo-project/logs/run.googleapis.com%2Fstdout"`; !strings.Contains(logs, want) {
		t.Errorf("local.function_logs is %s: want it pinned to %s, so that an entry written through the Logging API feeds no metric", logs, want)
	}
}
