package translate

// Alias is a model alias configured by the operator.
type Alias struct {
	// Model is the upstream model the alias stands for.
	Model string
	// Effort is the default reasoning.effort when the request names none.
	Effort string
	// Summary is the default reasoning.summary when the request names none.
	Summary string
	// Verbosity is the default text.verbosity when the request names none.
	Verbosity string
	// NoReasoning marks a model without reasoning: requests for it are not
	// eligible for stateless reasoning replay (no forced store:false or
	// encrypted reasoning) and do not get Config.DefaultEffort; the alias's
	// own Effort and Summary still apply when set.
	NoReasoning bool
}

// Config holds translation settings.
type Config struct {
	// Aliases maps the model name a client sends to an Alias.
	Aliases map[string]Alias
	// DefaultEffort is the reasoning.effort used for eligible requests when
	// neither the request nor its alias names one.
	DefaultEffort string
}

// ResolveModel returns the alias (or a zero Alias with Model=name when name
// is not an alias). An alias with an empty Model maps to name itself.
func (c *Config) ResolveModel(name string) Alias {
	if c != nil {
		if a, ok := c.Aliases[name]; ok {
			if a.Model == "" {
				a.Model = name
			}
			return a
		}
	}
	return Alias{Model: name}
}
