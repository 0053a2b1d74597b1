package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/egress-proxies/egress/internal/proxy"
	"github.com/egress-proxies/egress/internal/tenancy"
)

// The live changes of a proxy: a PATCH of its source ranges, CONNECT
// ports, bandwidth limit, access log and IPv6 egress, and new credentials. Each is one
// transaction on the document that counts a generation; the reconciler
// gives the VM the new configuration in place where its provider can
// (provider.Reconfigurer), and the endpoint stays. Where it cannot
// (another provider, a spec with its own cloud-init) the change makes a
// new VM: it is held to ROTATE_MIN_INTERVAL and counted against
// NAMESPACE_CREATES_PER_HOUR as a rotation is, in the same transaction
// (rules.LiveReplacement), and past either is 429 with when to retry.
//
// The access log may be turned off and on by a PATCH, as an engine's
// reload applies it to the next connection: a tenant that must stop
// keeping it should not have to give up its IP for that, and one asked to
// start keeping it should not wait for a new VM. Turning it off leaves a
// gap an operator can see: the PATCH is audited (who, which proxy, when),
// and the lines before it stay where they were shipped.

// proxyPatch is the body of a proxy's PATCH, a JSON merge patch (RFC
// 7396) of the fields a PATCH changes: a value replaces the proxy's, null
// (or an empty list or string) goes back to the default (no CONNECT port
// of its own, no bandwidth limit, no traffic quota, the access log on),
// and a field left out
// stays as it is.
type proxyPatch struct {
	Spec *specPatch `json:"spec"`
}

type specPatch struct {
	AllowedSourceRanges []string `json:"allowedSourceRanges"`
	ConnectPorts        []int32  `json:"connectPorts"`
	BandwidthLimit      *string  `json:"bandwidthLimit"`
	// TrafficQuota changes the month's bound on the proxy's bytes; the
	// month's count is the VM's and stays.
	TrafficQuota *string `json:"trafficQuota"`
	AccessLog    *bool   `json:"accessLog"`
	// IPv6Egress changes how connections to IPv6 destinations pick their
	// source: the agent applies it to the engine in place, where the
	// VM takes changes so; null goes back to the cloud's default.
	IPv6Egress *proxy.IPv6Egress `json:"ipv6Egress"`
}

// given reports which of a patch's spec members the body gave, null
// included: the typed value cannot tell null from left out.
func given(raw json.RawMessage) (spec map[string]json.RawMessage, specNull bool) {
	var top map[string]json.RawMessage
	if json.Unmarshal(raw, &top) != nil {
		return nil, false
	}
	if v, ok := top["spec"]; ok && bytes.Equal(bytes.TrimSpace(v), []byte("null")) {
		return nil, true
	}
	_ = json.Unmarshal(top["spec"], &spec)
	return spec, false
}

// patchProxy applies a PATCH: the merged spec is held to the rules of a
// create (validateSpec), inside the store's transaction, on the spec as
// it is there.
func (a *API) patchProxy(x *exchange) {
	key, member, ok := a.inNamespace(x, tenancy.UpdateProxy)
	if !ok {
		return
	}
	var req proxyPatch
	raw, e := decodePatch(x.w, x.r, &req, proxy.Proxy{})
	if e != nil {
		x.fail(e)
		return
	}
	members, specNull := given(raw)
	if specNull {
		x.fail(invalid(proxy.FieldError{Field: "spec", Reason: ReasonFieldNotPatchable, Description: "is not removed by a PATCH: give the fields it changes, spec.allowedSourceRanges, spec.connectPorts, spec.bandwidthLimit, spec.trafficQuota, spec.accessLog and spec.ipv6Egress"}))
		return
	}
	now := a.now()
	p, err := a.store.UpdateSpec(x.ctx, key, now, a.limits(), func(spec proxy.Spec) (proxy.Spec, error) {
		if _, ok := members["allowedSourceRanges"]; ok {
			spec.AllowedSourceRanges = req.Spec.AllowedSourceRanges
		}
		if _, ok := members["connectPorts"]; ok {
			spec.ConnectPorts = req.Spec.ConnectPorts
		}
		if _, ok := members["bandwidthLimit"]; ok {
			spec.BandwidthLimit = ""
			if req.Spec.BandwidthLimit != nil {
				spec.BandwidthLimit = *req.Spec.BandwidthLimit
			}
		}
		if _, ok := members["trafficQuota"]; ok {
			spec.TrafficQuota = ""
			if req.Spec.TrafficQuota != nil {
				spec.TrafficQuota = *req.Spec.TrafficQuota
			}
		}
		if _, ok := members["accessLog"]; ok {
			spec.AccessLog = req.Spec.AccessLog // null: the default, on
		}
		if _, ok := members["ipv6Egress"]; ok {
			spec.IPv6Egress = proxy.DefaultIPv6Egress(a.opts.Providers.IPv6Prefix(spec.Provider))
			if m := req.Spec.IPv6Egress; m != nil && *m != "" {
				spec.IPv6Egress = *m
			}
		}
		if errs := a.validateSpec(key.Namespace, spec); len(errs) > 0 {
			return spec, invalid(errs...)
		}
		return spec, nil
	})
	a.answerLive(x, key, now, p, err, member)
}

// rotateCredentials gives the proxy a new username and password. Where
// its VM takes them in place the rotation limits (ROTATE_MIN_INTERVAL,
// NAMESPACE_CREATES_PER_HOUR) are not held to it: they bound the VMs
// requests make, and a leaked password must be revocable at once, however
// recently the last was. Where new credentials need a new VM, they bound
// it as any other.
func (a *API) rotateCredentials(x *exchange) {
	key, member, ok := a.inNamespace(x, tenancy.RotateCredentials)
	if !ok {
		return
	}
	now := a.now()
	p, err := a.store.RotateCredentials(x.ctx, key, now, a.limits())
	a.answerLive(x, key, now, p, err, member)
}

// answerLive is the answer to a live change: the proxy as it now is, or
// why the change was refused.
func (a *API) answerLive(x *exchange, key proxy.Key, now time.Time, p *proxy.Proxy, err error, member view) {
	switch {
	case errors.Is(err, proxy.ErrRotatedRecently):
		x.fail(a.rotatedRecently(key, now, err))
	case errors.Is(err, proxy.ErrCreatesPerHour):
		x.fail(a.tooManyCreates(key.Namespace, now, err))
	case errors.Is(err, proxy.ErrBeingDeleted):
		e := failedPrecondition(ReasonProxyBeingDeleted, "proxy %s is being deleted; a proxy on its way out takes no change", key)
		e.metadata = map[string]string{"resource": key.Path()}
		x.fail(e)
	case errors.Is(err, proxy.ErrFailed):
		e := failedPrecondition(ReasonProxyFailed, "proxy %s is Failed, so it has no VM to take the change; delete it and create it again", key)
		e.metadata = map[string]string{"resource": key.Path()}
		x.fail(e)
	default:
		a.answer(x, key, p, err, http.StatusOK, member)
	}
}
