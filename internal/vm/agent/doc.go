// Package agent is the proxy VM's configuration agent: it follows the
// instance's egress-config metadata item (vmconfig.Config as JSON) on
// the metadata server, with ?wait_for_change=true&last_etag=ETAG, and
// applies each new value without a new VM. It runs inside the engine's own
// binary (egress-proxy agent), which the startup script already downloads
// and checks against its SHA-256: no second artifact to ship and verify,
// and the agent reads the configuration with the engine's own ReadConfig.
//
// Applying one configuration (Agent.Apply), the same at the first boot
// (the startup script runs `egress-proxy agent -once`) and at every change
// (the egress-agent.service unit runs `egress-proxy agent`):
//   - renders the nftables filter from the configuration (Filter) and loads
//     it: ingress to the proxy port from allowedSourceRanges only, egress
//     of the proxy's user refused to denyDestinations and to any port but
//     connectPorts. Established connections stay: conntrack keeps them, and
//     the rules are replaced in one nft transaction;
//   - writes the engine's configuration with a self-test user added,
//     made for this apply, and has the engine reload (SIGHUP: the engine
//     applies it to new requests and keeps the tunnels open, except those
//     from a source whose range was removed);
//   - proves it (SelfTest): without credentials 407, with the self-test's a
//     CONNECT to the metadata server refused and one to the probe target
//     carried, or, when the configuration's connectPorts leave the probe's
//     port out, refused for its port (SelfTest.Plan); a warm pool's VM
//     (generation 0, no users, the default ports) is proven the same way,
//     so a claimed VM is known to reach the internet;
//   - writes the configuration as the metadata carries it, reloads, waits
//     until the self-test's credentials get 407;
//   - deletes egress/error, writes egress/ready = the generation it now
//     serves, as a decimal number, and calls home (reason ready) with the
//     identity attributes read now (a claim changes them in the same
//     setMetadata call).
//
// A configuration that fails (it does not load, the filter does not load,
// the self-test fails): at a change, the agent puts back the files of the
// configuration it served before, loads them and reloads, so the VM keeps
// serving the previous generation, and egress/ready keeps saying so; it
// writes egress/error with the reason and calls home with reason
// boot-failed, so the reconciler looks now and, the VM not reporting the
// new generation, replaces it at its reconfigure timeout. The same value is
// not tried again; a new one is. At the first boot there is nothing to go
// back to: egress/error and boot-failed, as the script's own failures.
//
// On a cloud-init boot (Boot) the agent applies once and says the result
// in the readiness file. On a cloud whose VM's user data changes without
// a reboot (Azure's IMDS userData: the setting egress-watch-userdata) it
// then runs as UserDataWatch (`egress-proxy agent -watch`, watch.go): it
// reads the user data every few seconds (IMDS has no wait for a change),
// and applies the engine's configuration of a new one as above, a refused
// one rolled back, the readiness file saying the generation served and,
// beside it, why a change was refused. On a Static proxy's VM of a cloud
// whose static address leaves only through a route the VM sets (the
// setting egress-follow) it also runs that cloud's VM-side part, a
// Follower (`egress-proxy agent -follow`, follow.go), from the list
// cmd/egress-proxy links (internal/clouds/cloudsvm): the part follows the
// cloud's metadata until the address is the VM's, routes the VM's
// outbound IPv4 through it, keeps it so, and says the address as the
// readiness file's egress (FollowEnv.Report), which the provider waits
// for before it reads the proxy Running. The agent names no cloud's part.
package agent
