// Package redact finds secrets in text and replaces them with markers such
// as [REDACTED:anthropic-key]. The flight recorder and the tracing
// extension share it, so that a journal, a bundle and an exported span
// hide the same things.
//
// # Built-in rules
//
// The built-in rules apply in this order; each marker names its rule:
//
//   - private-key: a whole PEM private key block, from
//     "-----BEGIN … PRIVATE KEY-----" to "-----END … PRIVATE KEY-----"
//     (RSA, EC, DSA, OPENSSH, ENCRYPTED, PGP … BLOCK); an unterminated
//     block to the end of its base64 body;
//   - anthropic-key and openai-key: provider API keys (sk-ant-…, sk-…,
//     sk-proj-…);
//   - jwt: a JSON Web Token, three base64url parts whose first two
//     encode JSON objects (eyJ….eyJ….…, the signature maybe empty);
//   - github-token: GitHub tokens, ghp_, gho_, ghu_, ghs_ or ghr_ and 36 or
//     more letters and digits, and fine-grained github_pat_… tokens;
//   - gitlab-token: GitLab personal access tokens (glpat-…, 20 or more
//     characters, with dotted parts);
//   - slack-token: Slack tokens, xoxb-, xoxp-, xoxa-, xoxc-, xoxe-, xoxr-
//     or xoxs- then digits, a dash and 8 or more characters;
//   - slack-webhook: the path of a Slack webhook URL
//     (hooks.slack.com/services/T…/B…/…, also workflows/ and triggers/);
//     the host stays;
//   - google-api-key: Google API keys (AIza and 35 or more characters);
//   - stripe-key: Stripe secret and restricted keys, live or test
//     (sk_live_…, rk_live_…, sk_test_…, rk_test_…); publishable keys
//     (pk_…) stay;
//   - npm-token: npm access tokens (npm_ and 36 or more letters and
//     digits);
//   - url-password: the password of a URL or connection string
//     (postgres://user:pass@host, mysql://, redis://:pass@host,
//     https://user:pass@host); the scheme, user and host stay;
//   - curl-password: the password of curl -u user:pass or --user
//     user:pass, quoted or not, on the command's line or a continuation
//     line (after a backslash); the user stays;
//   - bearer-token: the token after "Bearer";
//   - aws-access-key and aws-secret-key: AWS access key IDs (AKIA…,
//     ASIA…) and a 40-character secret near "aws … secret";
//   - secret-json-field: the string value of a JSON member whose name looks
//     sensitive ("api_key": "…"), in plain text as well as in JSON text
//     that is itself inside a JSON string (\"api_key\": \"…\");
//   - secret-assignment: the value assigned to a name that looks sensitive,
//     quoted ("…", '…', \"…\") or not, in the forms of environment files
//     and shells (DB_PASSWORD=…, export X="…"), YAML (client_secret: …),
//     TOML (api_key = '…'), query strings (?api_key=…&token=…), HTTP
//     headers (X-Api-Key: …, Authorization: Basic …) and code (=>, :=).
//     Numbers, true, false, null, nil and none are left alone, so that
//     JSON stays valid.
//
// A name looks sensitive ([SensitiveName]) when it contains "key", "token",
// "secret", "passw" (password, passwd), "passphrase" or "credential", or
// "auth" not followed by a letter (auth, basic_auth, X-Auth-User; not
// author), in any case, except counters ("…tokens") and the prompt-cache
// prefix key; in an assignment or header in text, a name containing
// "authorization" is sensitive too.
//
// # Cost
//
// A single pass over the bytes looks for the words the rules start from
// (sk-, bearer, akia, asia, aws, -----BEGIN, a "://" followed by
// "user:password@", .eyJ, gh?_, github_pat_, glpat-, xox, hooks.slack.com/,
// AIza, sk_ and rk_ then live_ or test_, npm_, -u, and the words of
// sensitive names: key, token, secret, passw, passphrase, auth,
// credenti); text without any is returned as is, without allocating, and
// only the rules whose words were seen run. Two table loads per byte at
// most tell whether a pair of bytes starts such a word; most bytes take
// one. A redacted text is redacted again until it no longer changes, so
// redaction is idempotent.
package redact
