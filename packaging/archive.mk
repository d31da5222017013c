# Zonos Stream — install from this unpacked release archive.
#   make install              into ~/.local (no root needed)
#   sudo make install PREFIX=/usr/local
#   make uninstall            (same PREFIX as the install)
# DESTDIR is honoured for staged installs (distribution packages).
APPID := @APPID@
PREFIX ?= $(HOME)/.local
SRC := usr/local
BINS := zonos-stream zonos
ICON_SIZES := @ICON_SIZES@

.PHONY: default install uninstall
default:
	@echo "run 'make install' (into $(PREFIX)) or 'make uninstall'; PREFIX=/usr/local with sudo for every user"

install:
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/applications $(DESTDIR)$(PREFIX)/share/metainfo
	for b in $(BINS); do install -m 0755 $(SRC)/bin/$$b $(DESTDIR)$(PREFIX)/bin/$$b; done
	# Exec by absolute path: a desktop's launcher does not always have ~/.local/bin on its PATH.
	sed 's|^Exec=zonos-stream|Exec=$(PREFIX)/bin/zonos-stream|' $(SRC)/share/applications/$(APPID).desktop > $(DESTDIR)$(PREFIX)/share/applications/$(APPID).desktop
	chmod 0644 $(DESTDIR)$(PREFIX)/share/applications/$(APPID).desktop
	for s in $(ICON_SIZES); do install -Dm 0644 $(SRC)/share/icons/hicolor/$$s/apps/$(APPID).png $(DESTDIR)$(PREFIX)/share/icons/hicolor/$$s/apps/$(APPID).png; done
	install -m 0644 $(SRC)/share/metainfo/$(APPID).metainfo.xml $(DESTDIR)$(PREFIX)/share/metainfo/$(APPID).metainfo.xml
	@$(MAKE) --no-print-directory refresh
	@echo "installed Zonos Stream into $(DESTDIR)$(PREFIX)"

uninstall:
	rm -f $(addprefix $(DESTDIR)$(PREFIX)/bin/,$(BINS))
	rm -f $(DESTDIR)$(PREFIX)/share/applications/$(APPID).desktop $(DESTDIR)$(PREFIX)/share/metainfo/$(APPID).metainfo.xml
	for s in $(ICON_SIZES); do rm -f $(DESTDIR)$(PREFIX)/share/icons/hicolor/$$s/apps/$(APPID).png; done
	@$(MAKE) --no-print-directory refresh
	@echo "removed Zonos Stream from $(DESTDIR)$(PREFIX) (models, settings and caches stay: see README.md)"

# Menu and icon caches; either tool may be absent, and neither is needed for a staged install.
.PHONY: refresh
refresh:
	@if [ -z "$(DESTDIR)" ]; then \
	  command -v update-desktop-database >/dev/null && update-desktop-database -q $(PREFIX)/share/applications || true; \
	  [ -f $(PREFIX)/share/icons/hicolor/index.theme ] && command -v gtk-update-icon-cache >/dev/null && gtk-update-icon-cache -qtf $(PREFIX)/share/icons/hicolor || true; \
	fi
