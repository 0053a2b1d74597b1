package httpapi_test

import (
	"testing"
	"time"

	"github.com/egress-proxies/egress/internal/clock"
	"github.com/egress-proxies/egress/internal/httpapi"
)

// TestNamespaceKeepsAnOwner: no change leaves a namespace that has
// members without an owner: 409 naming the rule; a hand-over in one patch
// is taken. An admin may create a namespace with no members (and add its
// owner later), never one with members and no owner.
func TestNamespaceKeepsAnOwner(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC))
	e := firestoreEnvAt(t, clk)
	e.seed()
	const teamA = "/v1/namespaces/team-a"
	refused := func(reason, who, path, patch string) step {
		return step{reason: reason, who: who, method: "PATCH", path: path, body: patch, code: 409, status: "FAILED_PRECONDITION", errReason: httpapi.ReasonNamespaceNeedsOwner, field: "owner"}
	}
	e.run(clk, []step{
		refused("the last owner removes themself", owner, teamA, `{"members":{"owner@example.com":null}}`),
		refused("the last owner demotes themself", owner, teamA, `{"members":{"owner@example.com":"editor"}}`),
		refused("an admin removes the last owner", admin, teamA, `{"members":{"owner@example.com":null}}`),
		refused("an owner removes every member", owner, teamA, `{"members":{"owner@example.com":null,"editor@example.com":null,"viewer@example.com":null}}`),
		{reason: "a hand-over in one patch keeps an owner", who: owner, method: "PATCH", path: teamA, body: `{"members":{"owner@example.com":null,"editor@example.com":"owner"}}`, code: 200},
		{reason: "a namespace created with members must have an owner", who: admin, method: "PUT", path: "/v1/namespaces/team-c", body: `{"members":{"dev@example.com":"editor"}}`,
			code: 400, status: "INVALID_ARGUMENT", errReason: httpapi.ReasonNamespaceNeedsOwner, field: "owner"},
		{reason: "an admin may create a namespace with no members and add its owner later", who: admin, method: "PUT", path: "/v1/namespaces/team-c", body: `{}`, code: 201},
		{reason: "its quota changes while it has no members", who: admin, method: "PATCH", path: "/v1/namespaces/team-c", body: `{"quota":5}`, code: 200},
		refused("members without an owner are not added", admin, "/v1/namespaces/team-c", `{"members":{"dev@example.com":"editor"}}`),
		{reason: "an owner with them is", who: admin, method: "PATCH", path: "/v1/namespaces/team-c", body: `{"members":{"dev@example.com":"editor","lead@example.com":"owner"}}`, code: 200},
	})
}
