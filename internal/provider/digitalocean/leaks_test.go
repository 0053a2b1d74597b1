package digitalocean

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/provider/digitalocean/dofake"
	"github.com/egress-proxies/egress/internal/provider/vmside"
	"github.com/egress-proxies/egress/internal/vmstatus"
)

// made is the time every provider of these tests reads: its tags' times
// are known.
var made = time.Date(2026, 12, 7, 1, 0, 0, 0, time.UTC)

// newLeakEnv is newEnv with the clock at made.
func newLeakEnv(t *testing.T) *env {
	return newEnv(t, func(c *Config) { c.Now = func() time.Time { return made } })
}

// shared are the tags every Droplet of a deployment shares, which stay:
// the firewall is applied by the deployment's, and the next Droplet
// carries them.
var shared = []string{"egress-deployment:egress", "egress-proxy-port:3128", "proxy-operator-managed:true"}

// ownTags are the tags of req's Droplet that are its own.
func ownTags(req provider.CreateRequest) []string {
	return []string{dropletTag("egress", req.UID, vmstatus.StatusID(req), made), uidTag(req.UID)}
}

// account is what these tests read after each sequence: the account's
// tags but the shared ones, its reserved IPs (address → held), and what
// ListByTag lists (providerID → uid).
type account struct {
	Tags   []string
	IPs    map[string]bool
	Listed map[string]string
}

func (e *env) account(t *testing.T) account {
	t.Helper()
	var a account
	for _, tag := range e.fake.Tags() {
		if !slices.Contains(shared, tag) && tag != Tag(tagStaticIP, "true") {
			a.Tags = append(a.Tags, tag)
		}
	}
	slices.Sort(a.Tags)
	for _, ip := range e.fake.ReservedIPs() {
		if a.IPs == nil {
			a.IPs = map[string]bool{}
		}
		a.IPs[ip.IP] = ip.Droplet != 0
	}
	list, err := e.p.ListByTag(context.Background())
	if err != nil {
		t.Fatalf("ListByTag: %v", err)
	}
	for _, in := range list {
		if a.Listed == nil {
			a.Listed = map[string]string{}
		}
		a.Listed[in.ID] = in.UID
	}
	return a
}

func sorted(tags ...string) []string {
	slices.Sort(tags)
	return tags
}

// TestDeleteDropsTheDropletsTags: after each sequence of creates,
// deletes, faults and crashes, the account keeps no tag of a Droplet that
// is gone, or lists it as a residue the collector deletes; and never
// deletes a tag another Droplet, another deployment or a person still
// has. (Before Delete dropped them, every case but the last two left the
// Droplets' uid and status id tags behind, and listed no residue.)
func TestDeleteDropsTheDropletsTags(t *testing.T) {
	ctx := context.Background()
	req := request()
	req.RequestID = "create-1"
	next := req
	next.RequestID = "create-2"
	dup := another("dddddddd")
	staging := dropletTag("staging", dup.UID, vmstatus.StatusID(dup), made)

	cases := map[string]struct {
		reason string
		run    func(t *testing.T, e *env)
		want   account
	}{
		"Deleted": {
			reason: "a Delete deletes the Droplet's uid tag and its own tag",
			run: func(t *testing.T, e *env) {
				id := mustCreate(t, e, req)
				e.fake.Settle()
				mustDelete(t, e, id)
				mustDelete(t, e, id) // idempotent
				e.fake.Settle()
				mustDelete(t, e, id)
			},
		},
		"CrashBeforeTheTagsThenRetry": {
			reason: "a Delete cut after the destroy is tried again while DigitalOcean destroys the Droplet: the retry deletes its tags",
			run: func(t *testing.T, e *env) {
				id := mustCreate(t, e, req)
				e.fake.Settle()
				e.fake.Fail("tags.delete", 1, dofake.Status(500))
				if err := e.p.Delete(ctx, id); provider.KindOf(err) != provider.KindTransient {
					t.Fatalf("the Delete whose tag delete failed: %v, want transient", err)
				}
				mustDelete(t, e, id)
				e.fake.Settle()
			},
		},
		"CrashBeforeTheTagsDropletGone": {
			reason: "a Delete cut after the destroy, the Droplet gone before any retry: its own tag is a residue, listed with its uid",
			run: func(t *testing.T, e *env) {
				id := mustCreate(t, e, req)
				e.fake.Settle()
				e.fake.Fail("tags.delete", 1, dofake.Status(500))
				e.p.Delete(ctx, id)
				e.fake.Settle()
				mustDelete(t, e, id) // finds nothing: 404
			},
			want: account{Tags: sorted(ownTags(req)...), Listed: map[string]string{tagID(ownTags(req)[0]): req.UID}},
		},
		"ResidueDeleted": {
			reason: "the collector's Delete of the residue deletes the uid's tag, then the own tag; a second finds them gone",
			run: func(t *testing.T, e *env) {
				id := mustCreate(t, e, req)
				e.fake.Settle()
				e.fake.Fail("tags.delete", 1, dofake.Status(500))
				e.p.Delete(ctx, id)
				e.fake.Settle()
				residue := tagID(ownTags(req)[0])
				if in, err := e.p.Get(ctx, residue); err != nil || in.UID != req.UID || in.State != provider.StateTerminated || !in.CreatedAt.Equal(made) {
					t.Errorf("Get of the residue: %+v, %v; want Terminated, its uid, made then", in, err)
				}
				mustDelete(t, e, residue)
				mustDelete(t, e, residue)
				if _, err := e.p.Get(ctx, residue); provider.KindOf(err) != provider.KindNotFound {
					t.Errorf("Get of the deleted residue: %v, want not found", err)
				}
			},
		},
		"CrashBetweenTheTags": {
			reason: "a Delete cut after the uid's tag leaves the own tag alone: a residue all the same",
			run: func(t *testing.T, e *env) {
				e.fake.PutTag(ownTags(req)[0])
				mustDelete(t, e, tagID(ownTags(req)[0]))
			},
		},
		"ReplacedWhileAResidueIsLeft": {
			reason: "a residue of a uid whose proxy has a Droplet again is not listed (the proxy lives), and the uid's tag stays on that Droplet; its Delete lists the residue",
			run: func(t *testing.T, e *env) {
				id := mustCreate(t, e, req)
				e.fake.Settle()
				e.fake.Fail("tags.delete", 1, dofake.Status(500))
				e.p.Delete(ctx, id)
				e.fake.Settle()
				nid := mustCreate(t, e, next)
				e.fake.Settle()
				if diff := cmp.Diff(account{Tags: sorted(append(ownTags(req), ownTags(next)[0])...), Listed: map[string]string{nid: req.UID}}, e.account(t)); diff != "" {
					t.Errorf("with the replacement running (-want +got):\n%s", diff)
				}
				mustDelete(t, e, nid)
				e.fake.Settle()
			},
			want: account{Tags: []string{ownTags(req)[0]}, Listed: map[string]string{tagID(ownTags(req)[0]): req.UID}},
		},
		"Duplicate": {
			reason: "a Droplet that carries the same tags (a raced create's duplicate) keeps them, and is listed with its uid",
			run: func(t *testing.T, e *env) {
				id := mustCreate(t, e, req)
				e.fake.Settle()
				e.fake.Put(req.Name, "nyc1", e.fake.Creates()[0].Tags)
				mustDelete(t, e, id)
				e.fake.Settle()
			},
			want: account{Tags: sorted(ownTags(req)...), Listed: map[string]string{"": req.UID}},
		},
		"MadeBeforeItsOwnTag": {
			reason: "a Droplet made before the own tag has its uid's and status id tags deleted",
			run: func(t *testing.T, e *env) {
				n := e.fake.Put(req.Name, "nyc1", append(slices.Clone(shared), uidTag(req.UID), Tag(vmside.LabelStatusID, vmstatus.StatusID(req)), "web"))
				mustDelete(t, e, dropletID(n))
				e.fake.Settle()
			},
			want: account{Tags: []string{"web"}},
		},
		"AnotherDeploymentsTags": {
			reason: "another deployment's empty own tag and uid tag are never listed nor deleted, nor a person's empty tag",
			run: func(t *testing.T, e *env) {
				e.fake.PutTag(staging)
				e.fake.PutTag(uidTag(dup.UID))
				e.fake.PutTag(Tag(vmside.LabelStatusID, vmstatus.StatusID(dup)))
				e.fake.PutTag("web")
			},
			want: account{Tags: sorted(staging, uidTag(dup.UID), Tag(vmside.LabelStatusID, vmstatus.StatusID(dup)), "web")},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			e := newLeakEnv(t)
			tc.run(t, e)
			got := e.account(t)
			if name == "Duplicate" {
				// The duplicate's id is the fake's: compare its uid.
				for id, uid := range got.Listed {
					delete(got.Listed, id)
					got.Listed[""] = uid
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s (-want +got):\n%s", tc.reason, diff)
			}
		})
	}
}

// TestReservedIPCrashWindows: each window between a reserved IP and its
// record, crashed in (a fault the fake answers stops the call there, as a
// crash would), leaves an address that its proxy or the collector finds
// by its record, but for the one no API call of this provider can see:
// a Droplet destroyed by something else before its address's record,
// whose address ListByTag reports. (Before Delete wrote the missing
// record, "RecordFailedThenDeleted" left an address listed nowhere.)
func TestReservedIPCrashWindows(t *testing.T) {
	ctx := context.Background()
	req := request()
	req.StaticIP = true
	const addr = "203.0.113.2"
	rec := recordTag(addr, made, "egress", req.UID)

	// reserved is a Static proxy's Droplet, active, whose first Get
	// reserved addr onto it and could not write the record.
	reserved := func(t *testing.T, e *env) string {
		id := mustCreate(t, e, req)
		e.fake.Settle()
		e.fake.Fail("tags.create", 1, dofake.Status(500))
		if _, err := e.p.Get(ctx, id); provider.KindOf(err) != provider.KindTransient {
			t.Fatalf("the Get whose record failed: %v, want transient", err)
		}
		if diff := cmp.Diff(map[string]bool{addr: true}, e.account(t).IPs); diff != "" {
			t.Fatalf("the reserve (-want +got):\n%s", diff)
		}
		return id
	}
	// recorded is the account once the address is its proxy's again: an
	// unassigned reserved IP, its record, listed for the collector.
	recorded := account{Tags: []string{rec}, IPs: map[string]bool{addr: false}, Listed: map[string]string{reservedIPID(addr): req.UID}}
	cases := map[string]struct {
		reason   string
		run      func(t *testing.T, e *env)
		want     account
		reported int
	}{
		"RecordFailedThenGet": {
			reason: "the next Get records the address the Droplet holds",
			run: func(t *testing.T, e *env) {
				id := reserved(t, e)
				e.p.Get(ctx, id)
				mustDelete(t, e, id)
				e.fake.Settle()
			},
			want: recorded,
		},
		"RecordFailedThenDeleted": {
			reason: "a Delete before any Get records the address before it destroys the Droplet: the collector finds it",
			run: func(t *testing.T, e *env) {
				mustDelete(t, e, reserved(t, e))
				e.fake.Settle()
			},
			want: recorded,
		},
		"DeleteCutBeforeItsRecord": {
			reason: "a Delete whose record fails destroys nothing; its retry records and destroys",
			run: func(t *testing.T, e *env) {
				id := reserved(t, e)
				e.fake.Fail("tags.create", 1, dofake.Status(500))
				if err := e.p.Delete(ctx, id); provider.KindOf(err) != provider.KindTransient {
					t.Fatalf("the Delete whose record failed: %v, want transient", err)
				}
				if n := len(e.fake.Droplets()); n != 1 || e.fake.Droplets()[0].Status != "active" {
					t.Fatalf("the Droplet after a Delete cut before its record: %+v, want it active", e.fake.Droplets())
				}
				mustDelete(t, e, id)
				e.fake.Settle()
			},
			want: recorded,
		},
		"ReleasedThenCollected": {
			reason: "the collector releases the recorded address, then its record",
			run: func(t *testing.T, e *env) {
				mustDelete(t, e, reserved(t, e))
				e.fake.Settle()
				mustDelete(t, e, reservedIPID(addr))
			},
		},
		"ReleaseCutBeforeItsRecord": {
			reason: "a release cut before its record's delete leaves a record whose address is gone: a residue, listed with its uid, which the collector deletes",
			run: func(t *testing.T, e *env) {
				mustDelete(t, e, reserved(t, e))
				e.fake.Settle()
				e.fake.Fail("tags.delete", 1, dofake.Status(500))
				e.p.Delete(ctx, reservedIPID(addr))
				if diff := cmp.Diff(account{Tags: []string{rec}, Listed: map[string]string{tagID(rec): req.UID}}, e.account(t)); diff != "" {
					t.Errorf("after the cut release (-want +got):\n%s", diff)
				}
				mustDelete(t, e, tagID(rec))
			},
		},
		"DestroyedBySomeoneElse": {
			reason: "a Droplet destroyed outside this provider before its address's record leaves an address nothing names: reported, never listed",
			run: func(t *testing.T, e *env) {
				id := reserved(t, e)
				e.fake.SetStatus(e.droplet(t, id), "archive")
				e.fake.Settle()
			},
			want:     account{Tags: []string{ownTags(req)[0], uidTag(req.UID)}, IPs: map[string]bool{addr: false}, Listed: map[string]string{tagID(ownTags(req)[0]): req.UID}},
			reported: 1,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			e := newLeakEnv(t)
			tc.run(t, e)
			before := len(e.logs.String())
			if diff := cmp.Diff(tc.want, e.account(t)); diff != "" {
				t.Errorf("%s (-want +got):\n%s", tc.reason, diff)
			}
			logs := e.logs.String()[before:]
			if got := strings.Count(logs, `"msg":"digitalocean reserved IP unassigned and without a record: kept, never collected"`); got != tc.reported {
				t.Errorf("the last listing reported %d addresses without a record, want %d:\n%s", got, tc.reported, logs)
			}
			if tc.reported > 0 && (!strings.Contains(logs, `"address":"`+addr+`"`) || !strings.Contains(logs, `"count":1`)) {
				t.Errorf("the report names no address or count:\n%s", logs)
			}
		})
	}
}

func mustCreate(t *testing.T, e *env, req provider.CreateRequest) string {
	t.Helper()
	id, err := e.p.Create(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func mustDelete(t *testing.T, e *env, id string) {
	t.Helper()
	if err := e.p.Delete(context.Background(), id); err != nil {
		t.Fatalf("Delete(%s): %v", id, err)
	}
}
