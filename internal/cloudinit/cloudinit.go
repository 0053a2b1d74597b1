// Package cloudinit renders the default user-data of a proxy VM: a
// cloud-config that installs tinyproxy from the image's Debian packages and
// runs it as an HTTP CONNECT forward proxy on the requested port, open only
// to the proxy's allowedSourceRanges.
//
// It is provider-neutral: the reconciler renders it for any provider whose
// VMs boot a Debian-family image with cloud-init (the gcp provider's default
// image does). The values are checked and re-serialised before they reach
// the template, so no request can inject configuration.
//
// What the VM does with it:
//   - the configuration goes to /etc/egress-proxy/tinyproxy.conf, a file no
//     package owns, so the package's own conffile can never replace it;
//   - a systemd drop-in runs tinyproxy in the foreground from that file and
//     restarts it whenever it stops;
//   - tinyproxy writes no log file: its warnings go to the journal, which a
//     drop-in keeps in memory only, so nothing about the traffic lands on
//     the disk; connection logs are off (LogLevel Warning).
package cloudinit

import (
	"bytes"
	"fmt"
	"net/netip"
	"strings"
	"text/template"
)

// ConfigPath is where the rendered tinyproxy configuration goes.
const ConfigPath = "/etc/egress-proxy/tinyproxy.conf"

// Tinyproxy returns the tinyproxy configuration for a port and the source
// ranges allowed to use it.
func Tinyproxy(port int32, allowed []string) (string, error) {
	if port < 1 || port > 65535 {
		return "", fmt.Errorf("cloud-init: port %d is outside 1-65535", port)
	}
	if len(allowed) == 0 {
		return "", fmt.Errorf("cloud-init: no allowed source ranges: the proxy would be open to nobody")
	}
	ranges := make([]string, len(allowed))
	for i, r := range allowed {
		p, err := netip.ParsePrefix(strings.TrimSpace(r))
		if err != nil {
			return "", fmt.Errorf("cloud-init: allowed source range %q: %w", r, err)
		}
		ranges[i] = p.Masked().String()
	}
	var b bytes.Buffer
	if err := tinyproxyConf.Execute(&b, struct {
		Port   int32
		Ranges []string
	}{port, ranges}); err != nil {
		return "", err
	}
	return b.String(), nil
}

var tinyproxyConf = template.Must(template.New("tinyproxy.conf").Parse(`# Rendered by egress-proxies; replaced on every boot of a new VM.
User tinyproxy
Group tinyproxy
Port {{.Port}}
Timeout 600
MaxClients 200
# Warnings only: no per-connection lines, no log file.
LogLevel Warning
DisableViaHeader Yes
{{- range .Ranges}}
Allow {{.}}
{{- end}}
`))

// Render returns the default cloud-config.
func Render(port int32, allowed []string) (string, error) {
	conf, err := Tinyproxy(port, allowed)
	if err != nil {
		return "", err
	}
	var b bytes.Buffer
	if err := cloudConfig.Execute(&b, struct {
		Path, Conf string
	}{ConfigPath, indent(conf, "      ")}); err != nil {
		return "", err
	}
	return b.String(), nil
}

func indent(s, prefix string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = prefix + l
	}
	return strings.Join(lines, "\n")
}

var cloudConfig = template.Must(template.New("cloud-config").Parse(`#cloud-config
package_update: true
packages:
  - tinyproxy
write_files:
  - path: {{.Path}}
    permissions: "0644"
    content: |
{{.Conf}}
  - path: /etc/systemd/system/tinyproxy.service.d/egress-proxy.conf
    permissions: "0644"
    content: |
      [Service]
      Type=simple
      PIDFile=
      ExecStart=
      ExecStart=/usr/bin/tinyproxy -d -c {{.Path}}
      Restart=always
      RestartSec=2
  - path: /etc/systemd/journald.conf.d/egress-proxy.conf
    permissions: "0644"
    content: |
      [Journal]
      Storage=volatile
runcmd:
  - [systemctl, restart, systemd-journald]
  - [systemctl, daemon-reload]
  - [systemctl, enable, tinyproxy]
  - [systemctl, restart, tinyproxy]
`))
