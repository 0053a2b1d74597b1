package deploy_test

import (
	"fmt"
	"go/constant"
	"go/types"
	"sort"
	"strings"
	"sync"
	"testing"
	"unicode"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/tools/go/packages"
	"golang.org/x/tools/go/ssa"

	"github.com/egress-proxies/egress/deploy"
)

const (
	modulePath = "github.com/egress-proxies/egress"
	// functionsPkg registers the entry points Cloud Run functions serves.
	functionsPkg = modulePath + "/functions"
	frameworkPkg = "github.com/GoogleCloudPlatform/functions-framework-go/functions"
)

// call is one Google client call the analysis found: the client's Go
// method, the API method it names, and where the code makes it.
type call struct {
	client string // deploy.ClientMethods's key: "firestore.(*DocumentRef).Get"
	api    []string
	where  string
}

// reachedCalls returns, for each entry point that entryPkg (functions/)
// registers, the Google client calls its code can reach, found in the code
// itself: the packages of this module that entryPkg imports are
// type-checked from source and turned into SSA, and each entry point's
// reachable functions are walked from the function it registers.
//
// The walk errs on the side of more calls:
//   - a static call reaches its callee;
//   - an interface call reaches the method of every type of this module
//     and of the client packages that implements the interface;
//   - a call of a function value reaches every function whose value the
//     reached code (or a package's init) takes with that signature;
//   - a function value, or a value of this module's types in an interface,
//     handed to a library (a transaction's body, an HTTP route, a
//     goroutine of errgroup) is reached, since the library, whose body is
//     not loaded, calls it.
//
// What it does not follow is a function a library is given inside a struct,
// or one called through reflection: a Google call reached only that way
// would be missed. TestCallsAreFoundThroughInterfacesAndLibraries holds the
// rules above.
//
// The one fact of configuration it knows is FUNCTION_TARGET: Cloud Run
// functions sets it to the entry point, and internal/app builds only what
// serves(target) allows, so in internal/app a branch on serves(F) is taken
// for F the entry point only. Without that every function would be
// credited with the others' calls, since one App builds them all locally.
//
// The walk loads and type-checks every package the entry points reach and
// builds their SSA: the slowest thing the package's tests do (a minute and
// more under -race on two cores). Two tests ask it of the functions' entry
// package, so the answer is kept, per package, for the test binary's life;
// its callers only read it.
func reachedCalls(t *testing.T, entryPkg string) map[string][]call {
	t.Helper()
	reached.mu.Lock()
	defer reached.mu.Unlock()
	if calls, ok := reached.calls[entryPkg]; ok {
		return calls
	}
	calls := walkCalls(t, entryPkg)
	if reached.calls == nil {
		reached.calls = map[string]map[string][]call{}
	}
	reached.calls[entryPkg] = calls
	return calls
}

// reached holds reachedCalls' answers by entry package.
var reached struct {
	mu    sync.Mutex
	calls map[string]map[string][]call
}

// walkCalls is reachedCalls without the cache.
func walkCalls(t *testing.T, entryPkg string) map[string][]call {
	t.Helper()
	prog, modPkgs := loadProgram(t, entryPkg)
	roots := registered(t, modPkgs, entryPkg)
	isRoot := map[*ssa.Function]bool{}
	for _, fn := range roots {
		isRoot[fn] = true
	}
	// What the packages' inits take, whoever calls it later.
	var inits []*ssa.Function
	for _, p := range modPkgs {
		for _, m := range p.Members {
			if fn, ok := m.(*ssa.Function); ok && strings.HasPrefix(fn.Name(), "init") {
				inits = append(inits, fn)
				inits = append(inits, fn.AnonFuncs...)
			}
		}
	}
	candidates := implementers(prog, modPkgs)

	out := map[string][]call{}
	for name, root := range roots {
		seen := map[*ssa.Function]bool{}
		found := map[string]call{}
		var work []*ssa.Function
		reach := func(fn *ssa.Function) {
			if fn != nil && !seen[fn] {
				seen[fn] = true
				work = append(work, fn)
			}
		}
		taken := map[string][]*ssa.Function{}
		called := map[string]bool{}
		take := func(v *ssa.Function) {
			if isRoot[v] {
				return
			}
			if k := sigKey(v.Signature); called[k] {
				reach(v)
			} else {
				taken[k] = append(taken[k], v)
			}
		}
		record := func(callee *ssa.Function, at *ssa.Function) bool {
			key, ok := clientKey(callee)
			if !ok {
				return false
			}
			if _, dup := found[key]; !dup {
				found[key] = call{client: key, api: apiMethods(key), where: at.String()}
			}
			return true
		}
		// calledWith is a call of a function value of signature k.
		calledWith := func(k string) {
			called[k] = true
			for _, v := range taken[k] {
				reach(v)
			}
		}
		// handOver reaches what a call gives a library: the library may
		// call any function value it is given, and any method of a value
		// of this module's types.
		handOver := func(args []ssa.Value, at *ssa.Function) {
			for _, a := range args {
				if f := funcOf(a); f != nil {
					if !record(f, at) {
						reach(f)
					}
				} else if sig, ok := a.Type().Underlying().(*types.Signature); ok {
					calledWith(sigKey(sig))
				}
				if mi, ok := a.(*ssa.MakeInterface); ok && ours(mi.X.Type()) {
					ms := prog.MethodSets.MethodSet(mi.X.Type())
					for i := range ms.Len() {
						reach(prog.MethodValue(ms.At(i)))
					}
				}
			}
		}
		for _, fn := range inits {
			for _, v := range funcValues(fn, nil) {
				take(v)
			}
		}
		reach(root)
		for len(work) > 0 {
			fn := work[len(work)-1]
			work = work[:len(work)-1]
			blocks := liveBlocks(fn, name)
			for _, v := range funcValues(fn, blocks) {
				if !record(v, fn) {
					take(v)
				}
			}
			for _, b := range blocks {
				for _, instr := range b.Instrs {
					ci, ok := instr.(ssa.CallInstruction)
					if !ok {
						continue
					}
					c := ci.Common()
					switch callee := c.StaticCallee(); {
					case c.IsInvoke():
						iface := c.Value.Type().Underlying().(*types.Interface)
						for _, T := range candidates {
							if !types.Implements(T, iface) {
								continue
							}
							sel := prog.MethodSets.MethodSet(T).Lookup(c.Method.Pkg(), c.Method.Name())
							if sel == nil {
								continue
							}
							if m := prog.MethodValue(sel); m != nil && !record(m, fn) {
								reach(m)
							}
						}
						handOver(c.Args, fn)
					case callee != nil:
						if !record(callee, fn) {
							reach(callee)
						}
						if callee.Blocks == nil {
							handOver(c.Args, fn)
						}
					default:
						calledWith(sigKey(c.Signature()))
					}
				}
			}
		}
		keys := make([]string, 0, len(found))
		for k := range found {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			out[name] = append(out[name], found[k])
		}
	}
	return out
}

// ours reports whether t is (a pointer to) a named type of this module.
func ours(t types.Type) bool {
	if p, ok := t.(*types.Pointer); ok {
		t = p.Elem()
	}
	n, ok := t.(*types.Named)
	return ok && n.Obj().Pkg() != nil && strings.HasPrefix(n.Obj().Pkg().Path(), modulePath)
}

// liveBlocks are fn's blocks that can run in the process of entry point
// target: all of them, but in internal/app the branch on serves(F) for
// any other F.
func liveBlocks(fn *ssa.Function, target string) []*ssa.BasicBlock {
	if len(fn.Blocks) == 0 {
		return nil
	}
	seen := map[*ssa.BasicBlock]bool{}
	var out []*ssa.BasicBlock
	var visit func(b *ssa.BasicBlock)
	visit = func(b *ssa.BasicBlock) {
		if seen[b] {
			return
		}
		seen[b] = true
		out = append(out, b)
		succs := b.Succs
		if ifi, ok := b.Instrs[len(b.Instrs)-1].(*ssa.If); ok {
			if served, ok := servesOther(ifi.Cond, target); ok && !served {
				succs = succs[1:] // only the else branch
			}
		}
		for _, s := range succs {
			visit(s)
		}
	}
	visit(fn.Blocks[0])
	return out
}

// servesOther reads a condition that is internal/app's serves(F) for a
// constant F, and whether the process of target serves F.
func servesOther(cond ssa.Value, target string) (served, ok bool) {
	c, isCall := cond.(*ssa.Call)
	if !isCall {
		return false, false
	}
	callee := c.Call.StaticCallee()
	if callee == nil || callee.Name() != "serves" || callee.Pkg == nil || callee.Pkg.Pkg.Path() != modulePath+"/internal/app" {
		return false, false
	}
	k, isConst := c.Call.Args[len(c.Call.Args)-1].(*ssa.Const)
	if !isConst {
		return false, false
	}
	return constant.StringVal(k.Value) == target, true
}

// loadProgram type-checks, from source, entryPkg and the packages of this
// module it imports (their other dependencies come from export data,
// without bodies: the walk stops at a client's method) and builds their
// SSA.
func loadProgram(t *testing.T, entryPkg string) (*ssa.Program, []*ssa.Package) {
	t.Helper()
	graph, err := packages.Load(&packages.Config{Mode: packages.NeedName | packages.NeedImports | packages.NeedDeps, Dir: ".."}, entryPkg)
	if err != nil {
		t.Fatalf("listing the packages of %s: %v", entryPkg, err)
	}
	var ours []string
	packages.Visit(graph, nil, func(p *packages.Package) {
		if p.PkgPath == modulePath || strings.HasPrefix(p.PkgPath, modulePath+"/") {
			ours = append(ours, p.PkgPath)
		}
	})
	pkgs, err := packages.Load(&packages.Config{
		Mode: packages.NeedName | packages.NeedFiles | packages.NeedSyntax | packages.NeedTypes | packages.NeedTypesInfo | packages.NeedImports,
		Dir:  "..",
	}, ours...)
	if err != nil {
		t.Fatalf("loading %v: %v", ours, err)
	}
	if packages.PrintErrors(pkgs) > 0 {
		t.Fatal("the packages functions/ imports do not type-check")
	}
	prog := ssa.NewProgram(pkgs[0].Fset, ssa.InstantiateGenerics)
	created := map[*types.Package]bool{}
	var create func(tp *types.Package)
	create = func(tp *types.Package) {
		if created[tp] {
			return
		}
		created[tp] = true
		for _, imp := range tp.Imports() {
			create(imp)
		}
		prog.CreatePackage(tp, nil, nil, true)
	}
	var mod []*ssa.Package
	for _, p := range pkgs {
		created[p.Types] = true
	}
	for _, p := range pkgs {
		for _, imp := range p.Types.Imports() {
			create(imp)
		}
	}
	for _, p := range pkgs {
		mod = append(mod, prog.CreatePackage(p.Types, p.Syntax, p.TypesInfo, true))
	}
	prog.Build()
	return prog, mod
}

// registered finds the entry points entryPkg registers with the functions
// framework, by name: the function value each functions.HTTP or
// functions.CloudEvent call in its init is given.
func registered(t *testing.T, pkgs []*ssa.Package, entryPkg string) map[string]*ssa.Function {
	t.Helper()
	out := map[string]*ssa.Function{}
	for _, p := range pkgs {
		if p.Pkg.Path() != entryPkg {
			continue
		}
		for _, m := range p.Members {
			fn, ok := m.(*ssa.Function)
			if !ok || !strings.HasPrefix(fn.Name(), "init") {
				continue
			}
			for _, b := range fn.Blocks {
				for _, instr := range b.Instrs {
					ci, ok := instr.(ssa.CallInstruction)
					if !ok {
						continue
					}
					callee := ci.Common().StaticCallee()
					if callee == nil || callee.Pkg == nil || callee.Pkg.Pkg.Path() != frameworkPkg {
						continue
					}
					args := ci.Common().Args
					if len(args) != 2 {
						continue // the framework's own init
					}
					name, ok := args[0].(*ssa.Const)
					if !ok {
						t.Fatalf("%s registers a function under a name that is not a constant", fn)
					}
					target := funcOf(args[1])
					if target == nil {
						t.Fatalf("%s registers %s with no function the analysis can follow", fn, name.Value)
					}
					out[constant.StringVal(name.Value)] = target
				}
			}
		}
	}
	if len(out) == 0 {
		t.Fatalf("%s registers no entry point the analysis can see", entryPkg)
	}
	return out
}

// funcOf is the function a value is, through conversions.
func funcOf(v ssa.Value) *ssa.Function {
	switch x := v.(type) {
	case *ssa.Function:
		return x
	case *ssa.MakeClosure:
		return x.Fn.(*ssa.Function)
	case *ssa.ChangeType:
		return funcOf(x.X)
	case *ssa.MakeInterface:
		return funcOf(x.X)
	}
	return nil
}

// funcValues are the functions fn uses as values rather than calls, in
// blocks (all of fn's if nil): closures it makes and functions and method
// values it passes or stores.
func funcValues(fn *ssa.Function, blocks []*ssa.BasicBlock) []*ssa.Function {
	if blocks == nil {
		blocks = fn.Blocks
	}
	var out []*ssa.Function
	for _, b := range blocks {
		for _, instr := range b.Instrs {
			if ci, ok := instr.(ssa.CallInstruction); ok && ci.Common().StaticCallee() != nil {
				// The callee of a static call is a call, not a value.
				for _, a := range ci.Common().Args {
					if f, ok := a.(*ssa.Function); ok {
						out = append(out, f)
					}
				}
				continue
			}
			for _, r := range instr.Operands(nil) {
				if r == nil || *r == nil {
					continue
				}
				if f, ok := (*r).(*ssa.Function); ok {
					out = append(out, f)
				}
			}
			if mc, ok := instr.(*ssa.MakeClosure); ok {
				out = append(out, mc.Fn.(*ssa.Function))
			}
		}
	}
	return out
}

// sigKey is a signature's types without its parameters' names, which a
// function value's type does not have and a function's does.
func sigKey(sig *types.Signature) string {
	tuple := func(t *types.Tuple) string {
		var out []string
		for v := range t.Variables() {
			out = append(out, types.TypeString(v.Type(), nil))
		}
		return "(" + strings.Join(out, ",") + ")"
	}
	return tuple(sig.Params()) + tuple(sig.Results()) + fmt.Sprint(sig.Variadic())
}

// implementers are the concrete types an interface call may dispatch to:
// this module's and the client packages'.
func implementers(prog *ssa.Program, mod []*ssa.Package) []types.Type {
	var out []types.Type
	add := func(p *types.Package) {
		for _, name := range p.Scope().Names() {
			tn, ok := p.Scope().Lookup(name).(*types.TypeName)
			if !ok || tn.IsAlias() {
				continue
			}
			if named, ok := tn.Type().(*types.Named); ok && named.TypeParams().Len() > 0 {
				continue
			}
			if types.IsInterface(tn.Type()) {
				continue
			}
			out = append(out, tn.Type(), types.NewPointer(tn.Type()))
		}
	}
	for _, p := range mod {
		add(p.Pkg)
	}
	for _, p := range prog.AllPackages() {
		_, google := deploy.ClientPackages[p.Pkg.Path()]
		_, aws := awsClientPackages[p.Pkg.Path()]
		if google || aws {
			add(p.Pkg)
		}
	}
	return out
}

// clientKey names a function of a Google client package as
// deploy.ClientMethods does, "firestore.(*DocumentRef).Get" or
// "firestore.NewClient"; false for any other function.
func clientKey(fn *ssa.Function) (string, bool) {
	obj := fn.Object()
	if fn.Origin() != nil {
		obj = fn.Origin().Object()
	}
	if obj == nil || obj.Pkg() == nil {
		return "", false
	}
	short, ok := deploy.ClientPackages[obj.Pkg().Path()]
	if !ok {
		short, ok = awsClientPackages[obj.Pkg().Path()]
	}
	if !ok {
		return "", false
	}
	sig, _ := obj.Type().(*types.Signature)
	if sig == nil || sig.Recv() == nil {
		return short + "." + obj.Name(), true
	}
	recv := sig.Recv().Type()
	ptr := ""
	if p, ok := recv.(*types.Pointer); ok {
		ptr, recv = "*", p.Elem()
	}
	named, ok := recv.(*types.Named)
	if !ok {
		return short + "." + obj.Name(), true
	}
	return fmt.Sprintf("%s.(%s%s).%s", short, ptr, named.Obj().Name(), obj.Name()), true
}

// apiMethods are the API methods a client function calls: for Compute's
// generated REST clients the method's own name (InstancesClient.Insert is
// compute.instances.insert), for the others deploy.ClientMethods.
func apiMethods(key string) []string {
	if strings.HasPrefix(key, "ec2.") || strings.HasPrefix(key, "awspricing.") {
		return ec2Actions(key)
	}
	if api, ok := deploy.ClientMethods[key]; ok {
		return api
	}
	if rest, ok := strings.CutPrefix(key, "compute.(*"); ok {
		typ, method, _ := strings.Cut(rest, ").")
		if res, ok := strings.CutSuffix(typ, "Client"); ok {
			return []string{"compute." + lowerFirst(res) + "." + lowerFirst(method)}
		}
	}
	return []string{"unknown:" + key}
}

func lowerFirst(s string) string {
	r := []rune(s)
	r[0] = unicode.ToLower(r[0])
	return string(r)
}

// TestCallsAreFoundThroughInterfacesAndLibraries: the analysis finds a
// Compute call that an entry point makes only through an interface and a
// closure errgroup runs, names it as deploy.APIs would, and credits no
// other entry point with it.
func TestCallsAreFoundThroughInterfacesAndLibraries(t *testing.T) {
	got := map[string][]string{}
	for name, calls := range reachedCalls(t, modulePath+"/deploy/testdata/iamfixture") {
		for _, c := range calls {
			got[name] = append(got[name], c.api...)
		}
	}
	want := map[string][]string{"Labels": {"compute.instances.setLabels"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("API methods by entry point (-want +found):\n%s", diff)
	}
}
