// Package providertest holds Run, the conformance suite that every
// provider.Provider must pass: each provider's own tests run it against the
// provider with the levers of a Target.
package providertest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/egress-proxies/egress/internal/provider"
)

// Target is one provider under test together with the levers the suite needs
// that the contract itself does not offer.
type Target struct {
	Provider provider.Provider
	// Settle makes every instance that is provisioning finish doing so: it
	// advances a fake clock, or tells a fake cloud API to start its VMs.
	Settle func()
	// AddUnmanaged plants an instance with this name and uid whose managed
	// label is not LabelManagedYes, as a foreign tool sharing the project
	// would leave one. ListByTag must not return it.
	AddUnmanaged func(name, uid string)
	// Deployment is the deployment the provider was made for
	// (provider.LabelDeployment).
	Deployment string
	// AddManaged plants a managed instance with this name and uid,
	// labelled with deployment, or with no deployment label for "", as
	// another deployment sharing the project, or a release before the
	// label, would leave one.
	AddManaged func(name, uid, deployment string)
	// UnknownID is a well-formed providerID that names no instance.
	UnknownID string
	// ReportReady plays a settled VM's startup script saying the proxy
	// serves, for a provider that waits for it (gcp: the guest attribute
	// egress/ready). Nil for a provider whose VMs are ready once settled.
	ReportReady func(providerID string)
	// ReportBootError plays a VM's startup script saying the proxy cannot
	// serve, and why.
	ReportBootError func(providerID, reason string)
	// ReportGeneration plays a running VM saying it serves the engine
	// configuration of this generation (gcp: egress/ready), for a
	// provider.Reconfigurer whose VMs a test must play. Nil for one whose
	// VMs report it by themselves once settled.
	ReportGeneration func(providerID string, generation int64)
	// Placement is where the suite's VMs go, in the provider's own terms;
	// zero is Compute Engine's us-central1-a with an e2-micro and Debian
	// 12, which the mock takes too.
	Placement provider.Placement
}

// request returns a CreateRequest for a distinct proxy per suffix, placed
// where the target says.
func (tg Target) request(suffix string) provider.CreateRequest {
	req := request(suffix)
	if tg.Placement != (provider.Placement{}) {
		req.Placement = tg.Placement
	}
	return req
}

// Run runs the conformance suite. newTarget is called once per subtest and
// must return a fresh, empty provider.
func Run(t *testing.T, newTarget func(t *testing.T) Target) {
	t.Helper()
	ctx := context.Background()

	t.Run("CreateReturnsBeforeRunning", func(t *testing.T) {
		tg := newTarget(t)
		id := mustCreate(t, tg.Provider, tg.request("a"))
		got := mustGet(t, tg.Provider, id)
		if got.State != provider.StateProvisioning {
			t.Errorf("Get right after Create: state = %q, want %q (Create must not wait for the VM)", got.State, provider.StateProvisioning)
		}
	})

	t.Run("CreateIsIdempotentByName", func(t *testing.T) {
		tg := newTarget(t)
		req := tg.request("a")
		first := mustCreate(t, tg.Provider, req)
		second := mustCreate(t, tg.Provider, req)
		if first != second {
			t.Errorf("second Create with name %q returned %q, want the first call's %q", req.Name, second, first)
		}
		if n := len(mustList(t, tg.Provider)); n != 1 {
			t.Errorf("after two Creates with one name, ListByTag has %d instances, want 1", n)
		}
	})

	t.Run("LabelsReadBack", func(t *testing.T) {
		tg := newTarget(t)
		req := tg.request("a")
		id := mustCreate(t, tg.Provider, req)
		got := mustGet(t, tg.Provider, id)
		if got.ID != id || got.UID != req.UID || got.Deployment != tg.Deployment {
			t.Errorf("Get(%q) = {ID:%q UID:%q Deployment:%q}, want {ID:%q UID:%q Deployment:%q}", id, got.ID, got.UID, got.Deployment, id, req.UID, tg.Deployment)
		}
		list := mustList(t, tg.Provider)
		if len(list) != 1 || list[0].ID != id || list[0].UID != req.UID || list[0].Deployment != tg.Deployment {
			t.Errorf("ListByTag = %+v, want one instance {ID:%q UID:%q Deployment:%q}", list, id, req.UID, tg.Deployment)
		}
	})

	t.Run("GetUnknownIsNotFound", func(t *testing.T) {
		tg := newTarget(t)
		_, err := tg.Provider.Get(ctx, tg.UnknownID)
		if !errors.Is(err, provider.ErrNotFound) {
			t.Errorf("Get(%q) error = %v, want one that errors.Is ErrNotFound", tg.UnknownID, err)
		}
	})

	t.Run("GetDeletedIsNotFound", func(t *testing.T) {
		tg := newTarget(t)
		id := mustCreate(t, tg.Provider, tg.request("a"))
		if err := tg.Provider.Delete(ctx, id); err != nil {
			t.Fatalf("Delete(%q): %v", id, err)
		}
		tg.Settle()
		_, err := tg.Provider.Get(ctx, id)
		if !errors.Is(err, provider.ErrNotFound) {
			t.Errorf("Get(%q) after Delete: error = %v, want one that errors.Is ErrNotFound", id, err)
		}
	})

	t.Run("DeleteIsIdempotent", func(t *testing.T) {
		tg := newTarget(t)
		id := mustCreate(t, tg.Provider, tg.request("a"))
		for i := range 3 {
			if err := tg.Provider.Delete(ctx, id); err != nil {
				t.Errorf("Delete #%d of %q: %v, want nil (Delete is idempotent)", i+1, id, err)
			}
			tg.Settle()
		}
		if err := tg.Provider.Delete(ctx, tg.UnknownID); err != nil {
			t.Errorf("Delete of unknown %q: %v, want nil", tg.UnknownID, err)
		}
		if n := len(mustList(t, tg.Provider)); n != 0 {
			t.Errorf("after Delete, ListByTag has %d instances, want 0", n)
		}
	})

	t.Run("ListByTagReturnsManagedOnly", func(t *testing.T) {
		tg := newTarget(t)
		want := map[string]string{}
		for _, s := range []string{"a", "b", "c"} {
			req := tg.request(s)
			want[mustCreate(t, tg.Provider, req)] = req.UID
		}
		tg.AddUnmanaged("foreign-vm", "11111111-2222-4333-8444-555555555555")
		got := map[string]string{}
		for _, in := range mustList(t, tg.Provider) {
			got[in.ID] = in.UID
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("ListByTag (id → uid) mismatch (-want +got):\n%s", diff)
		}
	})

	t.Run("ListByTagReturnsThisDeploymentAndUnlabelledOnly", func(t *testing.T) {
		tg := newTarget(t)
		req := tg.request("a")
		own := mustCreate(t, tg.Provider, req)
		tg.AddManaged("other-deployment-vm", "22222222-3333-4444-8555-666666666666", "other-"+tg.Deployment)
		tg.AddManaged("unlabelled-vm", "33333333-4444-4555-8666-777777777777", "")
		got := map[string]string{}
		for _, in := range mustList(t, tg.Provider) {
			got[in.UID] = in.Deployment
		}
		// Another deployment's is never listed; one without the label is,
		// with no deployment, for the collector to report and keep.
		want := map[string]string{req.UID: tg.Deployment, "33333333-4444-4555-8666-777777777777": ""}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("ListByTag (uid → deployment) after creating %s (-want +got):\n%s", own, diff)
		}
	})

	t.Run("CreatedAtIsSetAndStable", func(t *testing.T) {
		tg := newTarget(t)
		id := mustCreate(t, tg.Provider, tg.request("a"))
		first := mustGet(t, tg.Provider, id).CreatedAt
		if first.IsZero() {
			t.Fatalf("Get(%q).CreatedAt is zero, want the creation time", id)
		}
		tg.Settle()
		mustCreate(t, tg.Provider, tg.request("a"))
		if again := mustGet(t, tg.Provider, id).CreatedAt; !again.Equal(first) {
			t.Errorf("CreatedAt changed from %v to %v after Settle and a repeated Create", first, again)
		}
		list := mustList(t, tg.Provider)
		if len(list) != 1 || !list[0].CreatedAt.Equal(first) {
			t.Errorf("ListByTag CreatedAt = %+v, want %v", list, first)
		}
	})

	t.Run("ProvisioningThenRunning", func(t *testing.T) {
		tg := newTarget(t)
		id := mustCreate(t, tg.Provider, tg.request("a"))
		if s := mustGet(t, tg.Provider, id).State; s != provider.StateProvisioning {
			t.Fatalf("state after Create = %q, want %q", s, provider.StateProvisioning)
		}
		tg.Settle()
		if tg.ReportReady != nil {
			// Booted is not serving: Running means the proxy said so.
			if s := mustGet(t, tg.Provider, id).State; s != provider.StateProvisioning {
				t.Fatalf("state after the VM booted, before its startup script said it serves = %q, want %q", s, provider.StateProvisioning)
			}
			tg.ReportReady(id)
		}
		got := mustGet(t, tg.Provider, id)
		if got.State != provider.StateRunning {
			t.Errorf("state after Settle = %q, want %q", got.State, provider.StateRunning)
		}
		if got.IP == "" {
			t.Errorf("a Running instance has no IP")
		}
	})

	t.Run("BootErrorIsReported", func(t *testing.T) {
		tg := newTarget(t)
		id := mustCreate(t, tg.Provider, tg.request("a"))
		tg.Settle()
		const reason = "tinyproxy does not answer on port 3128"
		tg.ReportBootError(id, reason)
		got := mustGet(t, tg.Provider, id)
		if got.State != provider.StateProvisioning || got.BootError != reason {
			t.Errorf("after the startup script reported an error: state %q, BootError %q; want %q and %q",
				got.State, got.BootError, provider.StateProvisioning, reason)
		}
	})

	t.Run("Reconfigure", func(t *testing.T) {
		runReconfigure(t, newTarget)
	})

	t.Run("ContextCancellationIsHonoured", func(t *testing.T) {
		tg := newTarget(t)
		id := mustCreate(t, tg.Provider, tg.request("a"))
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		calls := map[string]error{}
		_, calls["Create"] = tg.Provider.Create(cctx, tg.request("b"))
		_, calls["Get"] = tg.Provider.Get(cctx, id)
		calls["Delete"] = tg.Provider.Delete(cctx, id)
		_, calls["ListByTag"] = tg.Provider.ListByTag(cctx)
		for m, err := range calls {
			if !errors.Is(err, context.Canceled) {
				t.Errorf("%s with a cancelled context: error = %v, want one that errors.Is context.Canceled", m, err)
			}
		}
		list := mustList(t, tg.Provider)
		if diff := cmp.Diff([]string{id}, ids(list), cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("calls with a cancelled context changed the instances (-want +got):\n%s", diff)
		}
	})
}

// request returns a CreateRequest for a distinct proxy per suffix.
func request(suffix string) provider.CreateRequest {
	uid := fmt.Sprintf("00000000-0000-4000-8000-%012x", suffix[0])
	return provider.CreateRequest{
		Name:      provider.NameFromUID(uid),
		UID:       uid,
		Namespace: "conformance",
		ProxyName: "proxy-" + suffix,
		Placement: provider.Placement{
			Region:      "us-central1",
			Zone:        "us-central1-a",
			MachineType: "e2-micro",
			Image:       "projects/debian-cloud/global/images/family/debian-12",
		},
		StartupScript: "#!/bin/bash\necho the default bootstrap\n",
		Port:          3128,
	}
}

func mustCreate(t *testing.T, p provider.Provider, req provider.CreateRequest) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	id, err := p.Create(ctx, req)
	if err != nil {
		t.Fatalf("Create(%q): %v", req.Name, err)
	}
	if id == "" {
		t.Fatalf("Create(%q) returned an empty providerID", req.Name)
	}
	return id
}

func mustGet(t *testing.T, p provider.Provider, id string) *provider.Instance {
	t.Helper()
	in, err := p.Get(context.Background(), id)
	if err != nil {
		t.Fatalf("Get(%q): %v", id, err)
	}
	return in
}

func mustList(t *testing.T, p provider.Provider) []provider.Instance {
	t.Helper()
	list, err := p.ListByTag(context.Background())
	if err != nil {
		t.Fatalf("ListByTag: %v", err)
	}
	return list
}

func ids(list []provider.Instance) []string {
	out := make([]string, len(list))
	for i, in := range list {
		out[i] = in.ID
	}
	return out
}
