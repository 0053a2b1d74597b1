package provider

// Unwrap returns the provider beneath p's decorators: while p has an
// Unwrap() Provider method (a decorator that meters or injects faults, in
// the manner of errors.Unwrap), its result. Code that needs a concrete
// backend, such as the local stack's view of the mock's VMs, uses it on what
// the registry hands out.
func Unwrap(p Provider) Provider {
	for {
		d, ok := p.(interface{ Unwrap() Provider })
		if !ok {
			return p
		}
		p = d.Unwrap()
	}
}

// beneath returns the first of p and the providers beneath its
// decorators that is a T: a decorator that implements T itself (to see
// the call) is found before its backend.
func beneath[T any](p Provider) (T, bool) {
	for {
		if t, ok := p.(T); ok {
			return t, true
		}
		d, ok := p.(interface{ Unwrap() Provider })
		if !ok {
			var none T
			return none, false
		}
		p = d.Unwrap()
	}
}
