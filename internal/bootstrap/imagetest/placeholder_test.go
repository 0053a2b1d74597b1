package imagetest

import (
	"fmt"
	"strings"
)

// placeholderScript stands in for bootstrap.Render until that lands: the
// same contract (metadata keys, guest attributes, call-home), in as few
// lines as keep it honest, so that the harness is proved before the real
// script is put through it.
func placeholderScript(port int, allow []string, user, password string) string {
	return fmt.Sprintf(`#!/bin/bash
set -u
MD=http://169.254.169.254/computeMetadata/v1
md() { curl -sf -H 'Metadata-Flavor: Google' "$MD/$1"; }
guest() { curl -sf -X "$1" -H 'Metadata-Flavor: Google' "$MD/instance/guest-attributes/egress/$2" --data-binary "${3:-}" >/dev/null; }
fail() { guest PUT error "$1"; echo "egress: $1" >&2; exit 1; }
guest DELETE ready; guest DELETE error
PORT=%[1]d; ALLOW="%[2]s"; PUSER=%[3]s; PPASS=%[4]s
command -v tinyproxy >/dev/null || { apt-get update -qq && apt-get install -y -qq tinyproxy; } || fail "installing tinyproxy"
id egress-proxy >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin egress-proxy
mkdir -p /etc/egress-proxy
{
  echo "User egress-proxy"; echo "Group egress-proxy"; echo "Port $PORT"; echo "Timeout 600"
  echo "LogLevel Warning"; echo "DisableViaHeader Yes"; echo "BasicAuth $PUSER $PPASS"
  echo "ConnectPort 443"; echo "ConnectPort 80"; echo "Allow 127.0.0.1"
  for r in $ALLOW; do echo "Allow $r"; done
} > /etc/egress-proxy/tinyproxy.conf
systemctl disable --now tinyproxy.service >/dev/null 2>&1
cat > /etc/systemd/system/egress-proxy.service <<EOF
[Service]
ExecStart=/usr/bin/tinyproxy -d -c /etc/egress-proxy/tinyproxy.conf
Restart=always
[Install]
WantedBy=multi-user.target
EOF
nft delete table inet egress 2>/dev/null
nft -f - <<EOF || fail "nftables"
table inet egress {
  chain input {
    type filter hook input priority 0; policy accept;
    tcp dport $PORT ip saddr { 127.0.0.1, ${ALLOW// /, } } accept
    tcp dport $PORT drop
  }
  chain output {
    type filter hook output priority 0; policy accept;
    meta skuid != egress-proxy accept
    ct state established,related accept
    ip daddr 169.254.169.254 meta l4proto { tcp, udp } th dport 53 accept
    ip daddr { 0.0.0.0/8, 10.0.0.0/8, 100.64.0.0/10, 127.0.0.0/8, 169.254.0.0/16, 172.16.0.0/12, 192.168.0.0/16, 224.0.0.0/4 } reject
    ip6 daddr { ::1, fc00::/7, fe80::/10 } reject
  }
}
EOF
systemctl daemon-reload; systemctl enable egress-proxy.service; systemctl restart egress-proxy.service
PROBE=$(md instance/attributes/egress-probe-target) || fail "no egress-probe-target"
connect() { curl -s -o /dev/null -m 5 -w '%%{http_connect}' -x "http://127.0.0.1:$PORT" "$@"; }
for i in $(seq 50); do [ "$(connect -U "$PUSER:$PPASS" -p -k "https://$PROBE/")" = 200 ] && break; sleep 0.2; done
[ "$(connect -U "$PUSER:$PPASS" -p -k "https://$PROBE/")" = 200 ] || fail "the proxy does not CONNECT to $PROBE"
[ "$(connect -p -k "https://$PROBE/")" = 407 ] || fail "the proxy serves without credentials"
[ "$(connect -U "$PUSER:$PPASS" -p "http://169.254.169.254/")" != 200 ] || fail "the proxy reaches the metadata server"
guest PUT ready ok
TOKEN=$(md instance/service-accounts/default/token | sed -n 's/.*"access_token": *"\([^"]*\)".*/\1/p')
DATA=$(printf '{"namespace":"%%s","name":"%%s","uid":"%%s","reason":"ready"}' "$(md instance/attributes/egress-namespace)" "$(md instance/attributes/egress-name)" "$(md instance/attributes/egress-uid)" | base64 -w0)
curl -sf -X POST -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' \
  --data "{\"messages\":[{\"data\":\"$DATA\"}]}" "$(md instance/attributes/egress-pubsub-endpoint)/v1/$(md instance/attributes/egress-call-home-topic):publish" || echo "egress: call home failed" >&2
`, port, strings.Join(allow, " "), user, password)
}

// withPlaceholder adds to the provider's metadata what it does not send
// yet: the startup script and the settings it reads.
func withPlaceholder(attrs map[string]string, password string) map[string]string {
	attrs["startup-script"] = placeholderScript(ProxyPort, []string{AllowedRange.String()}, proxyUser, password)
	attrs["enable-guest-attributes"] = "TRUE"
	attrs["egress-probe-target"] = HostPort(TLSHostAddr, TLSPort)
	attrs["egress-call-home-topic"] = topic
	attrs["egress-pubsub-endpoint"] = "http://" + HostPort(PubSubAddr, PubSubPort)
	attrs["egress-namespace"] = namespace
	attrs["egress-name"] = proxyName
	attrs["egress-uid"] = uid
	return attrs
}
