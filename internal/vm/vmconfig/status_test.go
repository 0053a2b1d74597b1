package vmconfig_test

import (
	"testing"

	"github.com/egress-proxies/egress/internal/vm/vmconfig"
)

// TestSignOrder: a traffic order's signature holds the order to the key,
// the nonce, the request and its own text, so the status password (which
// travels in clear) and an order seen on the path make no other order;
// and it is no status answer's signature over the same parts, so an
// answer the VM signed is never an order.
func TestSignOrder(t *testing.T) {
	key, other := []byte("the-vm-sign-key-of-thirty-two-b!"), []byte("another-vm-sign-key-thirty-two-b")
	const nonce, order = "bm9uY2Utb2YtdGhlLXRlc3Qtb3JkZXI", "eyJzdG9wIjpudWxsfQ"
	base := vmconfig.SignOrder(key, nonce, "PUT", vmconfig.TrafficPath, order)
	for name, sig := range map[string]string{
		"AnotherKey":    vmconfig.SignOrder(other, nonce, "PUT", vmconfig.TrafficPath, order),
		"AnotherNonce":  vmconfig.SignOrder(key, nonce+"A", "PUT", vmconfig.TrafficPath, order),
		"AnotherMethod": vmconfig.SignOrder(key, nonce, "GET", vmconfig.TrafficPath, order),
		"AnotherTarget": vmconfig.SignOrder(key, nonce, "PUT", vmconfig.StatusPath, order),
		"AnotherOrder":  vmconfig.SignOrder(key, nonce, "PUT", vmconfig.TrafficPath, order+"A"),
		// The parts are length-prefixed: moving a byte from one to the
		// next is another message.
		"PartsRunTogether": vmconfig.SignOrder(key, nonce, "PU", "T"+vmconfig.TrafficPath, order),
		"AnAnswer":         vmconfig.SignAnswer(key, nonce, "PUT", vmconfig.TrafficPath, []byte(order)),
	} {
		if sig == base {
			t.Errorf("%s: the signature is the order's", name)
		}
	}
	if again := vmconfig.SignOrder(key, nonce, "PUT", vmconfig.TrafficPath, order); again != base {
		t.Errorf("the same order signed twice: %q and %q; the engine could check none", base, again)
	}
}
