// Command hello is the tool that toolbin's tests build.
package main

import "fmt"

func main() { fmt.Println("hello from a built tool") }
