// Package workflow is how code runs inside Docket: a workflow is a named,
// registered entry point that the server invokes with a Binding it creates.
//
// Clients name a registered workflow when they submit a task; they can never
// supply an entry point or a binding. Register your own workflows on a
// Registry before starting an embedded server:
//
//	reg := workflow.NewRegistry()
//	err := reg.Register("invoice.render", workflow.Definition{
//		Pool: dockettype.PoolOnline,
//		Run: func(ctx context.Context, b *workflow.Binding, input json.RawMessage) (json.RawMessage, error) {
//			return render(ctx, b.Tenant(), input)
//		},
//	})
package workflow
