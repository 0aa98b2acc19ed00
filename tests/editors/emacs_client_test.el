;;; emacs_client_test.el --- a real-client test: Emacs (batch) with editors/emacs/ttap.el  -*- lexical-binding: t; -*-
;; Opens train.py in a copy of the fixture workspace with eglot or lsp-mode (Debian's packages),
;; waits for ttap's diagnostics, checks line and code, hovers (eglot asks for plaintext, lsp-mode
;; for markdown) and asks for the code actions. Run by run_emacs_test.sh:
;;   emacs --batch -Q -l emacs_client_test.el TTAP REPO WORKSPACE eglot|lsp-mode
;; Prints "N passed, M failed" and exits non-zero on failure.
(require 'package)
(setq package-user-dir (make-temp-file "ttap-elpa" t))
;; Debian's elpa-* packages (loaded by site-start, which -Q skips).
(add-to-list 'package-directory-list "/usr/share/emacs/site-lisp/elpa")
(package-initialize)
(require 'cl-lib)
(require 'python)

(defvar ttap-test-passed 0)
(defvar ttap-test-failed 0)
(defun ttap-test-check (ok what)
  (if ok (cl-incf ttap-test-passed)
    (cl-incf ttap-test-failed)
    (princ (format "FAILED: %s\n" what) #'external-debugging-output)))
(defun ttap-test-finish ()
  (princ (format "%d passed, %d failed\n" ttap-test-passed ttap-test-failed))
  (kill-emacs (if (= ttap-test-failed 0) 0 1)))
(defun ttap-test-wait (pred seconds)
  (let ((deadline (+ (float-time) seconds)) (ok nil))
    (while (and (not (setq ok (funcall pred))) (< (float-time) deadline))
      (accept-process-output nil 0.1))
    ok))

(let* ((args (last command-line-args-left 4))
       (ttap (nth 0 args)) (repo (nth 1 args)) (ws (file-name-as-directory (nth 2 args)))
       (client (nth 3 args)))
  (setq command-line-args-left nil)
  (add-to-list 'load-path (expand-file-name "editors/emacs" repo))
  (require 'ttap)
  (setq ttap-executable ttap
        ttap-settings '(:model (:enabled :json-false)))
  (find-file (expand-file-name "train.py" ws))
  (python-mode)
  (cond
   ((member client '("eglot" "eglot-plain"))
    ;; eglot asks for markdown hovers when markdown-mode is there, else for plaintext (as a
    ;; bare Emacs does): "eglot-plain" hides it.
    (when (equal client "eglot-plain") (fmakunbound 'gfm-view-mode))
    (require 'eglot)
    (ttap-eglot-setup)
    ;; What M-x eglot does (eglot-ensure waits for a command loop, which batch Emacs has not).
    (let ((default-directory ws)) (apply #'eglot (eglot--guess-contact)))
    (ttap-test-wait (lambda () (eglot-current-server)) 30)
    (let ((server (eglot-current-server)))
      (ttap-test-check server "eglot connected to ttap")
      (unless server (ttap-test-finish))
      (ttap-test-check
       (ttap-test-wait (lambda () (flymake-diagnostics)) 60) "diagnostics arrived (flymake)")
      (let ((d (cl-find-if (lambda (d) (string-match-p "TTA001\\|dataloader" (flymake-diagnostic-text d)))
                           (flymake-diagnostics))))
        (ttap-test-check d "a TTA001 diagnostic")
        (when d
          (ttap-test-check (= (line-number-at-pos (flymake-diagnostic-beg d)) 12) "on line 12")))
      (goto-char (point-min)) (forward-line 11) (forward-char 2)
      (let* ((hover (jsonrpc-request server :textDocument/hover (eglot--TextDocumentPositionParams)))
             (contents (plist-get hover :contents)))
        (if (fboundp 'gfm-view-mode)
            (ttap-test-check (equal (plist-get contents :kind) "markdown") "a markdown hover")
          (ttap-test-check (equal (plist-get contents :kind) "plaintext")
                           (format "a plaintext hover: %S" (plist-get contents :kind)))
          (ttap-test-check (not (string-match-p "\\*\\*\\|`" (or (plist-get contents :value) "")))
                           "no markdown marks in plaintext"))
        (ttap-test-check (string-match-p "TTA001" (or (plist-get contents :value) "")) "the hover names the code"))
      (let ((actions (jsonrpc-request
                      server :textDocument/codeAction
                      (list :textDocument (eglot--TextDocumentIdentifier)
                            :range (list :start (list :line 11 :character 0) :end (list :line 11 :character 3))
                            :context (list :diagnostics [])))))
        (ttap-test-check (cl-some (lambda (a) (string-match-p "num_workers\\|DataLoader" (plist-get a :title))) actions)
                         "the DataLoader quick fix is offered")
        (ttap-test-check (cl-some (lambda (a) (string-match-p "Suppress TTA001" (plist-get a :title))) actions)
                         "the suppress action is offered")
        ;; The preferred quick fix, applied as eglot applies it.
        (let ((preferred (cl-find-if (lambda (a) (eq (plist-get a :isPreferred) t)) actions)))
          (ttap-test-check (and preferred (plist-get preferred :edit)) "a preferred fix with its edit")
          (when (and preferred (plist-get preferred :edit))
            (eglot--apply-workspace-edit (plist-get preferred :edit))
            (save-excursion
              (goto-char (point-min)) (forward-line 4)
              (let ((line5 (buffer-substring (line-beginning-position) (line-end-position))))
                (ttap-test-check (string-match-p "num_workers=" line5)
                                 (format "the DataLoader gained num_workers: %s" line5)))))))
      (eglot-shutdown server)))
   ((equal client "lsp-mode")
    (require 'lsp-mode)
    (setq lsp-enabled-clients '(ttap) lsp-auto-guess-root t lsp-restart 'ignore
          lsp-enable-file-watchers nil lsp-headerline-breadcrumb-enable nil
          lsp-modeline-code-actions-enable nil lsp-modeline-diagnostics-enable nil
          lsp-lens-enable nil lsp-diagnostics-provider :none lsp-session-file (make-temp-file "lsp-session"))
    (ttap-lsp-mode-setup)
    (ttap-test-check (gethash 'ttap lsp-clients) "ttap registered with lsp-mode")
    (ttap-test-check (lsp--client-add-on? (gethash 'ttap lsp-clients)) "as an add-on (next to pyright/ruff)")
    (lsp)
    (ttap-test-check (ttap-test-wait (lambda () (lsp-workspaces)) 30) "lsp-mode connected to ttap")
    (let ((file (buffer-file-name)) found)
      (ttap-test-check
       (ttap-test-wait
        (lambda ()
          (setq found (cl-find-if (lambda (d) (equal (lsp:diagnostic-code? d) "TTA001"))
                                  (gethash file (lsp-diagnostics t)))))
        60)
       "a TTA001 diagnostic")
      (when found
        (ttap-test-check (= (lsp:position-line (lsp:range-start (lsp:diagnostic-range found))) 11) "on line 12")))
    (goto-char (point-min)) (forward-line 11) (forward-char 2)
    (let* ((hover (lsp-request "textDocument/hover" (lsp--text-document-position-params)))
           (contents (and hover (lsp:hover-contents hover)))
           (value (if (hash-table-p contents) (gethash "value" contents) (format "%s" contents))))
      (ttap-test-check (string-match-p "TTA001" (or value "")) "the hover names the code"))
    (lsp-workspace-shutdown (car (lsp-workspaces)))))
  (ttap-test-finish))
