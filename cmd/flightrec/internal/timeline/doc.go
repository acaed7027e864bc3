// Package timeline turns an incident bundle into the human timeline that
// flightrec show prints, and its JSON form.
package timeline
