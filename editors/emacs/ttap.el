;;; ttap.el --- TorchTraceAP for Emacs: `ttap lsp' with eglot or lsp-mode  -*- lexical-binding: t; -*-

;; Registers the TorchTraceAP language server (profiler-trace findings as diagnostics, hovers
;; and quick fixes on Python lines) with either client:
;;  - lsp-mode: as an add-on server (`:add-on? t'), so it runs next to pyright, pylsp or ruff
;;    in the same buffer.  This is the way to keep your Python server.
;;  - eglot: eglot runs one server per major mode, so `ttap-eglot-setup' makes ttap the
;;    python-mode server (use it in a dedicated mode or project if you also want pyright).
;; Tested by tests/editors/emacs_client_test.el (Emacs 28, Debian's eglot 1.9 and lsp-mode 8).
;;
;;   (add-to-list 'load-path "/path/to/ttap/editors/emacs")
;;   (require 'ttap)
;;   (setq ttap-executable "/path/to/ttap")   ; or ttap on PATH
;;   (ttap-lsp-mode-setup)                    ; lsp-mode, next to your Python server
;;   ;; or: (ttap-eglot-setup)               ; eglot, ttap as the python-mode server

;;; Code:

(defgroup ttap nil "TorchTraceAP: PyTorch profiler traces as diagnostics." :group 'tools)

(defcustom ttap-executable "ttap"
  "The ttap binary (a name on PATH or a full path)."
  :type 'string)

(defcustom ttap-settings nil
  "Server settings sent as initializationOptions, a plist such as (:windows 100 :model (:enabled t))."
  :type 'plist)

(defun ttap--command ()
  (list ttap-executable "lsp"))

;;;###autoload
(defun ttap-eglot-setup ()
  "Make ttap the eglot server of python-mode and python-ts-mode buffers."
  (require 'eglot)
  (let ((modes (if (fboundp 'python-ts-mode) '(python-mode python-ts-mode) '(python-mode))))
    (add-to-list 'eglot-server-programs
                 (cons modes (append (ttap--command) (when ttap-settings
                                                        (list :initializationOptions ttap-settings)))))))

;;;###autoload
(defun ttap-lsp-mode-setup ()
  "Register ttap with lsp-mode as an add-on server for Python buffers."
  (require 'lsp-mode)
  (lsp-register-client
   (make-lsp-client
    :new-connection (lsp-stdio-connection #'ttap--command)
    :activation-fn (lsp-activate-on "python")
    :server-id 'ttap
    :add-on? t
    :priority -2
    :initialization-options (lambda () ttap-settings))))

(provide 'ttap)
;;; ttap.el ends here
